"""TensorFlow's dtype names for static graphs: ``tf.float32`` and ``tf.float64``.

A float64 graph computes with the session's backend (Numba by default). A graph that reads a
float32 placeholder or variable computes like TensorFlow on a CPU: every step is a float32
operation (NumPy's, through the Python backend, a step at a time), variables keep float32
values, and fetched values are float32 (``np.float32`` for a scalar). ``+ - * /``, ``sqrt`` and
the comparisons round as TensorFlow's do, so the same graph prints the same numbers; a
transcendental function may differ from TensorFlow's by an ulp, and a reduction over many rows
sums in its own order (per-chunk sums in float32 over the Python backend's chunks of 65,536
rows, combined pairwise in float64), so its last bits may differ from TensorFlow's. A graph
mixing the two computes in float32 (TensorFlow refuses mixed operations).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class DType:
    """A dtype name and its NumPy dtype."""

    __slots__ = ("name", "numpy")

    def __init__(self, name: str) -> None:
        self.name, self.numpy = name, np.dtype(name)

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    as_numpy_dtype = property(lambda self: self.numpy.type)


float32, float64 = DType("float32"), DType("float64")
DTYPES = {"float32": float32, "float64": float64}


def as_dtype(value: Any) -> DType:
    """A DType from a DType, its name, or a NumPy float dtype (None: float64)."""
    if value is None:
        return float64
    if isinstance(value, DType):
        return value
    try:
        name = np.dtype(value).name
    except TypeError:
        name = None
    if name not in DTYPES:
        raise TypeError(f"dtype must be tf.float32 or tf.float64, got {value!r}")
    return DTYPES[name]
