"""symgraph: expressions as DAGs, derivatives that share them, and readable fast kernels.

The pipeline, one module per stage, each using only earlier ones::

    ops -> graph -> printer / parser / sympy_bridge -> differentiate -> schedule
        -> emit_python / emit_numba -> compiler -> api -> cli
"""

from .api import CompiledFunction, compile
from .differentiate import diff, grad, hessian, jacobian, jvp, vjp
from .functions import FUNCTIONS as _FUNCTIONS
from .graph import Node, apply, const, count_ops, evaluate, free_symbols, symbol, symbols
from .ops import OPS
from .parser import ParseError, parse
from .pipeline import __version__
from .printer import to_latex, to_text, to_text_cse

globals().update(_FUNCTIONS)


def _node_repr_svg(node: Node) -> str | None:
    # Jupyter shows expressions as pictures; Graphviz is optional (None: Jupyter falls back).
    from .draw import to_svg

    return to_svg(node)


Node._repr_svg_ = _node_repr_svg


def __getattr__(name: str):
    # The SymPy bridge imports SymPy (slow): load it on first use only.
    if name in ("from_sympy", "to_sympy"):
        from . import sympy_bridge

        return getattr(sympy_bridge, name)
    raise AttributeError(f"module 'symgraph' has no attribute {name!r}")


pi = const(3.141592653589793)
E = const(2.718281828459045)

__all__ = [
    "CompiledFunction", "Node", "OPS", "ParseError", "apply", "compile", "const", "count_ops",
    "diff", "evaluate", "free_symbols", "from_sympy", "grad", "hessian", "jacobian", "jvp",
    "parse", "symbol", "symbols", "to_latex", "to_sympy", "to_text", "to_text_cse",
    "vjp", "__version__",
    "pi", "E", *sorted(_FUNCTIONS),
]
