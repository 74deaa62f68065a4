"""symgraph: expressions as DAGs, derivatives that share them, and readable fast kernels.

The package is its pipeline: one folder per stage, in data-flow order, each importing only
itself and earlier stages (``tests/test_layout.py`` checks every import)::

    version -> ir (ops, opspec, exact, node, traversal, evaluate, functions, tidy, printer, numpy_*)
        -> frontends (lexer, parser, sympy_bridge, trace, traced, coerce)
        -> ad (differentiate, traced) -> pictures (draw) -> lower (naming, schedule, programs)
        -> backends (common, python, registry, numba/ with its runtime/, tape/)
        -> runtime (loading, caches, batching, outputs, dask) -> api -> graphs -> cli
        -> static, dynamic (the public TF1/PyTorch-style faces) -> this module
"""

from .ad.differentiate import diff, grad, hessian, jacobian, jvp, vjp
from .ad.sparsity import affine_outputs, hessian_sparsity, jacobian_sparsity
from .api import CompiledFunction, compile
from .frontends.parser import ParseError, parse
from .frontends.userfunctions import (
    Function,
    UndefinedFunctionError,
    define_function,
    remove_function,
    undefined_function,
)
from .ir.evaluate import count_ops, evaluate, free_symbols
from .ir.functions import FUNCTIONS as _FUNCTIONS
from .ir.node import Node, apply, const, symbol, symbols
from .ir.numpy_arrays import SymbolicArray  # and NumPy's protocols on Node
from .ir.ops import OPS
from .ir.printer import to_latex, to_text, to_text_cse
from .version import __version__

globals().update(_FUNCTIONS)


def _node_repr_svg(node: Node) -> str | None:
    # Jupyter shows expressions as pictures; Graphviz is optional (None: Jupyter falls back).
    from .pictures.draw import to_svg

    return to_svg(node)


Node._repr_svg_ = _node_repr_svg


def __getattr__(name: str):
    # The SymPy bridge imports SymPy (slow): load it on first use only.
    if name in ("from_sympy", "to_sympy"):
        from .frontends import sympy_bridge

        return getattr(sympy_bridge, name)
    if name in ("optimize", "integrate"):  # SciPy's faces: SciPy is imported on first use
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'symgraph' has no attribute {name!r}")


pi = const(3.141592653589793)
E = const(2.718281828459045)

__all__ = [
    "CompiledFunction", "Function", "Node", "OPS", "ParseError", "SymbolicArray",
    "UndefinedFunctionError", "affine_outputs", "apply", "compile", "const", "count_ops",
    "define_function", "diff", "evaluate", "free_symbols", "from_sympy", "grad", "hessian",
    "hessian_sparsity", "jacobian", "jacobian_sparsity", "remove_function",
    "undefined_function",
    "jvp", "parse", "symbol", "symbols", "to_latex", "to_sympy", "to_text", "to_text_cse",
    "vjp", "__version__",
    "pi", "E", *sorted(_FUNCTIONS),
]
