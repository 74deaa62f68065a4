"""Dynamic graphs spelled like PyTorch: ``import symgraph.dynamic as torch``.

The public face of `symgraph.graphs.eager` (tensors that record their graph, ``backward``,
``SGD``) and `symgraph.graphs.freeze` (trace once, compile, guard on the values branched on);
every op of the table is here as a function on tensors too (``torch.tanh(t)``).
"""

from .graphs.eager import *  # noqa: F403
from .graphs.eager import __all__ as _eager_names
from .graphs.eager import __getattr__  # noqa: F401  (the op table, on tensors)
from .graphs.freeze import FreezeError, Frozen, freeze

__all__ = [*_eager_names, "freeze", "Frozen", "FreezeError"]
