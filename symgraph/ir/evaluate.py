"""Questions asked of a whole DAG: its free symbols, its size, and its value (the reference
evaluator, with NumPy's semantics). Iterative, like every traversal."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .node import Node
from .ops import OPS
from .traversal import topological_order


def free_symbols(outputs: Node | Iterable[Node]) -> list[Node]:
    """Symbols the expressions depend on, sorted by name."""
    from .node import Node  # graph imports this module: bind at call time
    roots = [outputs] if isinstance(outputs, Node) else list(outputs)
    return sorted((n for n in topological_order(roots) if n.op == "symbol"), key=lambda s: s.value)


def count_ops(outputs: Node | Iterable[Node]) -> int:
    """Number of distinct operation nodes (not symbols or constants)."""
    from .node import Node  # graph imports this module: bind at call time
    roots = [outputs] if isinstance(outputs, Node) else list(outputs)
    return sum(1 for n in topological_order(roots) if n.args)


def evaluate(outputs: Node | Sequence[Node], values: Mapping) -> np.ndarray | float:
    """Reference interpreter (NumPy semantics). `values` maps symbols or names to numbers/arrays."""
    from .node import Node  # graph imports this module: bind at call time
    single = isinstance(outputs, Node)
    roots = [outputs] if single else list(outputs)
    env = {(k.value if isinstance(k, Node) else k): v for k, v in values.items()}
    result: dict[int, object] = {}
    with np.errstate(all="ignore"):
        for node in topological_order(roots):
            if node.op == "const":
                result[id(node)] = np.float64(node.value)
            elif node.op == "symbol":
                if node.value not in env:
                    raise KeyError(f"no value given for symbol {node.value!r}")
                result[id(node)] = np.asarray(env[node.value], dtype=float)
            else:
                result[id(node)] = OPS[node.op].evaluate(*[result[id(a)] for a in node.args])
    values_out = [result[id(r)] for r in roots]
    return values_out[0] if single else values_out
