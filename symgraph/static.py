"""Static graphs spelled like TensorFlow 1: ``import symgraph.static as tf``.

The public face of `symgraph.graphs.static_graph` (placeholders, variables, optimizers) and
`symgraph.graphs.session` (``Session.run``); every op of the table is here elementwise too
(``tf.tanh(x)``). ``tf.float32``/``tf.float64`` are the dtypes (graphs.dtypes says how float32
graphs compute), ``tf.train.GradientDescentOptimizer`` and the other optimizers are under
``tf.train`` as in TensorFlow 1, and a placeholder with a None first dimension (or no shape)
takes any number of rows, reduced in a loop (graphs.batch).
"""

from __future__ import annotations

from typing import Any

from .graphs import static_graph as _graph
from .graphs.dtypes import DType, float32, float64
from .graphs.session import Session
from .graphs.static_graph import *  # noqa: F403
from .graphs.static_graph import __all__ as _graph_names

_OPTIMIZERS = ("GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
               "AdagradOptimizer", "RMSPropOptimizer")


class _Train:
    """``tf.train``: the optimizers."""

    def __getattr__(self, name: str) -> Any:
        if name in _OPTIMIZERS:
            return getattr(_graph, name)
        raise AttributeError(f"symgraph.static.train has no {name!r}; it has "
                             f"{', '.join(_OPTIMIZERS)}")

    def __dir__(self) -> list[str]:
        return list(_OPTIMIZERS)


train = _Train()


def __getattr__(name: str) -> Any:
    return _graph.__getattr__(name)  # the op table, elementwise


__all__ = [*_graph_names, "Session", "DType", "float32", "float64", "train"]
