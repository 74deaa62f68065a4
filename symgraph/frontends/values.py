"""Numbers given for variables, checked: real numbers only, as float64 arrays.

``np.asarray(v, dtype=float)`` accepts too much: ``None`` becomes nan, a complex array loses
its imaginary part (with a warning at most), ``"2.5"`` becomes 2.5 and a masked array its
data, masked or not. Every entry point that takes values (a compiled function's points and
batches, a session's feed_dict and assign, variables, eager tensors) reads them through
`real_array`, which refuses those with a TypeError naming the argument.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

_REAL_KINDS = frozenset("fiub")  # float, signed and unsigned integers, bool


def real_array(value: Any, what: str) -> np.ndarray:
    """`value` as a float64 array (a new one only when needed); TypeError naming `what` for
    anything that is not real numbers."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{what} is a masked array; pass its .filled(...) values (masked "
                        "entries have no number)")
    if isinstance(value, np.ndarray) and value.dtype.kind in _REAL_KINDS:
        return value.astype(np.float64, copy=False)
    if isinstance(value, float) or (isinstance(value, numbers.Real) and not isinstance(
            value, (str, bytes))):
        return np.asarray(value, dtype=np.float64)
    array = np.asarray(value)
    kind = array.dtype.kind
    if kind in _REAL_KINDS:
        return array.astype(np.float64, copy=False)
    if kind == "O":  # mixed Python objects: each must be a real number
        for index, item in np.ndenumerate(array):
            if not isinstance(item, numbers.Real) or isinstance(item, np.ma.core.MaskedConstant):
                where = f" at index {index}" if array.ndim else ""
                raise TypeError(f"{what} must be real numbers; got {_describe(item)}{where}")
        return array.astype(np.float64)
    raise TypeError(f"{what} must be real numbers; got {_describe(value, kind)}")


def _describe(value: Any, kind: str | None = None) -> str:
    if value is None:
        return "None"
    if isinstance(value, (str, bytes)):
        return f"the text {value!r} (convert it with float() if it is a number)"
    kind = kind or getattr(getattr(value, "dtype", None), "kind", None)
    if isinstance(value, complex) or kind == "c":
        return "complex numbers (symgraph computes with real float64; pass .real or split " \
               "real and imaginary parts into separate variables)"
    if kind in ("U", "S"):
        return "text (an array of strings)"
    return f"a {type(value).__name__}"
