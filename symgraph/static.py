"""Static graphs spelled like TensorFlow 1: ``import symgraph.static as tf``.

The public face of `symgraph.graphs.static_graph` (placeholders, variables, optimizers) and
`symgraph.graphs.session` (``Session.run``); every op of the table is here elementwise too
(``tf.tanh(x)``).
"""

from .graphs.session import Session
from .graphs.static_graph import *  # noqa: F403
from .graphs.static_graph import __all__ as _graph_names
from .graphs.static_graph import __getattr__  # noqa: F401  (the op table, elementwise)

__all__ = [*_graph_names, "Session"]
