"""Derivatives on the DAG, built as ordinary nodes that share the forward subexpressions.

Reverse mode (`vjp`, `grad`, `jacobian`, `hessian`) walks one topological order backwards and
accumulates adjoints, so a gradient costs O(size of f) whatever the number of variables.
Forward mode (`jvp`) walks it forwards. Both read each op's local partials from the op table,
so an op's derivative rule is written once. Structurally zero derivatives are never built.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..frontends.coerce import as_expression, as_symbols, check_not_constants
from ..ir.node import Node, combine, const
from ..ir.ops import COMPARISONS, OPS
from ..ir.traversal import bulk, topological_order
from .traced import derivative_function


def _check_variables(wrt, outputs: Sequence[Node] = ()) -> list[Node]:
    """The variables (nodes or names; None: the free symbols of `outputs`)."""
    return as_symbols(wrt, outputs, role="the variables of a derivative")


def _depends(order: list[Node], variables: list[Node]) -> set[Node]:
    """The nodes whose value depends on at least one of `variables`."""
    live = set(variables)
    for node in order:
        for arg in node.args:
            if arg in live:
                live.add(node)
                break
    return live


def _partials(node: Node) -> tuple:
    return OPS[node.op].partials(node.args, node)


def _total(terms: list[Node]) -> Node:
    return terms[0] if len(terms) == 1 else combine("add", terms)


def _times(adjoint: Node, partial) -> Node:
    """``adjoint * partial``; a 0/1 mask selects instead of multiplying, so an infinite or nan
    adjoint does not leak into the branch the mask switches off (``inf * 0`` is nan)."""
    if partial.__class__ is not Node:  # a number from the op table: 1.0 for sums, -1.0 for neg
        if partial == 1.0:
            return adjoint
        return combine("mul", [adjoint, partial])
    if partial.op in COMPARISONS or partial.op == "where":
        if partial.op in COMPARISONS:
            return partial.call("where", adjoint, 0.0)
        if all(a.is_const for a in partial.args[1:]):
            kept, dropped = (1, 2) if partial.args[1].value == 1.0 else (2, 1)
            if partial.args[kept].value == 1.0 and partial.args[dropped].value == 0.0:
                branches = [None, None]
                branches[kept - 1], branches[dropped - 1] = adjoint, 0.0
                return partial.args[0].call("where", *branches)
    return combine("mul", [adjoint, partial])


@bulk
def vjp(outputs: Sequence[Node], cotangents: Sequence, wrt: Sequence[Node]) -> list[Node]:
    """Reverse mode: ``sum_k cotangents[k] * d outputs[k] / d wrt[j]`` for each j."""
    outputs = [as_expression(o) for o in outputs]
    variables = _check_variables(wrt, outputs)
    order = topological_order(outputs)
    live = _depends(order, variables)
    contributions: dict[Node, list[Node]] = {}
    for output, seed in zip(outputs, cotangents, strict=True):
        if output in live:
            contributions.setdefault(output, []).append(as_expression(seed))
    wanted = set(variables)
    adjoints: dict[Node, Node] = {}
    for node in reversed(order):
        terms = contributions.pop(node, None)
        if terms is None:
            continue
        adjoint = terms[0] if len(terms) == 1 else combine("add", terms)
        if node in wanted:
            adjoints[node] = adjoint
        if not node.args:
            continue
        for arg, partial in zip(node.args, OPS[node.op].partials(node.args, node)):
            if partial is not None and arg in live:
                term = _times(adjoint, partial)
                pending = contributions.get(arg)
                if pending is None:
                    contributions[arg] = [term]
                else:
                    pending.append(term)
    zero = const(0.0)
    return [adjoints.get(v, zero) for v in variables]


@bulk
def jvp(outputs: Sequence[Node], wrt: Sequence[Node], tangents: Sequence) -> list[Node]:
    """Forward mode: ``sum_j d outputs[k] / d wrt[j] * tangents[j]`` for each k."""
    outputs = [as_expression(o) for o in outputs]
    variables = _check_variables(wrt, outputs)
    order = topological_order(outputs)
    live = _depends(order, variables)
    tangent: dict[Node, Node] = {}
    for v, t in zip(variables, tangents, strict=True):
        tangent[v] = as_expression(t)
    for node in order:
        if not node.args or node not in live:
            continue
        terms = [_times(tangent[arg], partial)
                 for arg, partial in zip(node.args, _partials(node))
                 if partial is not None and arg in tangent]
        if terms:
            tangent[node] = _total(terms)
    zero = const(0.0)
    return [tangent.get(o, zero) for o in outputs]


def grad(f: Node, wrt: Sequence[Node] | None = None) -> list[Node]:
    """Gradient of a scalar expression: one node per variable (default: its free symbols).
    Of a Python function: a function of the same arguments computing it (ad/traced.py)."""
    if callable(f) and not isinstance(f, Node):
        return derivative_function("grad", f, wrt, jacobian)
    f = as_expression(f, wrt)  # text: the names differentiated by are variables
    variables = _check_variables(wrt, [f])
    check_not_constants(variables, [f], "the variables of a derivative")  # E read as e
    return vjp([f], [1.0], variables)


def jacobian(outputs: Sequence[Node], wrt: Sequence[Node] | None = None) -> list[list[Node]]:
    """Rows are outputs, columns variables; one reverse sweep per output (of a Python
    function: a function, as for `grad`)."""
    if callable(outputs) and not isinstance(outputs, Node):
        return derivative_function("jacobian", outputs, wrt, jacobian)
    outputs = [as_expression(o, wrt) for o in outputs]
    variables = _check_variables(wrt, outputs)
    check_not_constants(variables, outputs, "the variables of a derivative")
    return [vjp([o], [1.0], variables) for o in outputs]


def hessian(f: Node, wrt: Sequence[Node] | None = None) -> list[list[Node]]:
    """Second derivatives, reverse over reverse; symmetric by construction (upper triangle).
    Of a Python function: a function, as for `grad`."""
    if callable(f) and not isinstance(f, Node):
        return derivative_function("hessian", f, wrt, hessian)
    f = as_expression(f, wrt)
    variables = _check_variables(wrt, [f])
    gradient = grad(f, variables)
    n = len(variables)
    rows: list[list[Node]] = [[const(0.0)] * n for _ in range(n)]
    for i in range(n):
        second = vjp([gradient[i]], [1.0], variables[i:])
        for j in range(i, n):
            rows[i][j] = rows[j][i] = second[j - i]
    return rows


def diff(f: Node, x: Node, n: int = 1) -> Node:
    """The n-th derivative of `f` with respect to the symbol `x`."""
    if n < 0:
        raise ValueError("the order of a derivative cannot be negative")
    f = as_expression(f, [x])
    (x,) = _check_variables([x], [f])
    check_not_constants([x], [f], "the variable of a derivative")
    for _ in range(n):
        f = vjp([f], [1.0], [x])[0]
    return f
