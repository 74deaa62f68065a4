"""Derivatives on the DAG, built as ordinary nodes that share the forward subexpressions.

Reverse mode (`vjp`, `grad`, `jacobian`, `hessian`) walks one topological order backwards and
accumulates adjoints, so a gradient costs O(size of f) whatever the number of variables.
Forward mode (`jvp`) walks it forwards. Both read each op's local partials from the op table,
so an op's derivative rule is written once. Structurally zero derivatives are never built.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..frontends.coerce import as_expression, as_symbols, check_not_constants
from ..ir.node import Node, apply, combine, const
from ..ir.ops import COMPARISONS, OPS
from ..ir.traversal import bulk, topological_order
from .guards import clean_nodes, conjoin, mask_guard, merge, select
from .quotients import product, shared_divisors, summed
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


def _times(adjoint: Node, partial) -> Node:
    """``adjoint * partial`` (a number partial from the op table: 1.0 for sums, -1.0 for neg)."""
    if partial.__class__ is not Node and partial == 1.0:
        return adjoint
    return combine("mul", [adjoint, partial])


def _term(guard, inner: Node, partial):
    """The (guard, inner) pair an argument receives through `partial`, or None if never live:
    a mask narrows the guard instead of multiplying (guards.py says why)."""
    mask = mask_guard(partial)
    if mask is None:
        return guard, _times(inner, partial)
    narrowed = conjoin(guard, mask)
    return None if narrowed == 0.0 else (narrowed, inner)


@bulk
def vjp(outputs: Sequence[Node], cotangents: Sequence, wrt: Sequence[Node]) -> list[Node]:
    """Reverse mode: ``sum_k cotangents[k] * d outputs[k] / d wrt[j]`` for each j."""
    outputs = [as_expression(o) for o in outputs]
    variables = _check_variables(wrt, outputs)
    order = topological_order(outputs)
    live = _depends(order, variables)
    clean = None  # found on the first guarded adjoint: smooth expressions never need it
    shared = None  # the divisors of more than one quotient: found on the first quotient
    # A node's contributions: (guard, inner) pairs, an unguarded one as its inner node alone
    # (smooth expressions have no other kind); `guarded` holds the nodes with a guarded one.
    contributions: dict[Node, list] = {}
    guarded: set[Node] = set()
    for output, seed in zip(outputs, cotangents, strict=True):
        if output in live:
            contributions.setdefault(output, []).append(as_expression(seed))
    wanted = set(variables)
    adjoints: dict[Node, Node] = {}
    computed: set[Node] = set()  # adjoints used whole more than once: `summed` keeps them
    for node in reversed(order):
        terms = contributions.pop(node, None)
        if terms is None:
            continue
        if node not in guarded:  # no branch above: a plain sum
            guard, adjoint = None, terms[0] if len(terms) == 1 else summed(terms, computed)
        else:
            if clean is None:
                clean = clean_nodes(order)
            guard, adjoint = merge([(None, t) if t.__class__ is Node else t for t in terms],
                                   node not in clean)
        if node in wanted:
            adjoints[node] = select(guard, adjoint)
            computed.add(adjoint)
        elif node.op == "add" and len(node.args) - (node.args[-1].op == "const") > 1:
            computed.add(adjoint)  # passed whole to two or more arguments (a constant last)
        args = node.args
        if not args:
            continue
        partials = OPS[node.op].partials(args, node)
        quotient = None
        if node.op == "div" and guard is None and args[0] in live and args[1] in live:
            if shared is None:
                shared = shared_divisors(order)
            if args[1] not in shared:  # a / b, b no other quotient's: one division for both
                quotient = apply("div", adjoint, args[1])
        for arg, partial in zip(args, partials):
            if partial is None or arg not in live:
                continue
            if quotient is not None:  # d/da = g / b, d/db = -(g / b) * (a / b), as JAX's
                term = quotient if arg is args[0] else apply("neg", combine("mul", (
                    quotient, node)))
                quotient = None if arg is args[1] else quotient
            elif guard is None and partial.__class__ is Node and partial.op != "where" and (
                    partial.op not in COMPARISONS):  # no mask (`mask_guard`)
                term = product(node, adjoint, partial)  # `_term`, unguarded, inlined
            elif guard is None and partial.__class__ is float and partial == 1.0:
                term = adjoint  # a sum's argument: `_times`, inlined
            else:
                term = _term(guard, adjoint, partial)
                if term is None:
                    continue
                if term[0] is None:
                    term = term[1]
                else:
                    guarded.add(arg)
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
    tangent: dict[Node, tuple] = {}
    for v, t in zip(variables, tangents, strict=True):
        tangent[v] = (None, as_expression(t))
    for node in order:
        if not node.args or node not in live:
            continue
        terms = []
        for arg, partial in zip(node.args, _partials(node)):
            if partial is not None and arg in tangent:
                term = _term(*tangent[arg], partial)
                if term is not None:
                    terms.append(term)
        if len(terms) == 1 and terms[0][0] is None:
            tangent[node] = terms[0]
        elif terms:  # consumers may multiply by anything: the guard is kept
            tangent[node] = merge(terms, True)
    zero = const(0.0)
    return [select(*tangent[o]) if o in tangent else zero for o in outputs]


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


MAX_ORDER = 1000  # beyond, even x**2*exp(x)'s derivatives take minutes and gigabytes


def diff(f: Node, x: Node, n: int = 1) -> Node:
    """The n-th derivative of `f` with respect to the symbol `x`.

    Orders above one go forward (`jvp`, tangent 1): a forward sweep over an earlier
    derivative rebuilds that derivative's own tangents as the same interned nodes, so the
    n-th derivative has O(n) nodes per node of f for products (Leibniz's terms) instead of
    the reverse sweep's factor per order (exp(x*y)*sin(x): 909 nodes at order 40, where
    repeated gradients passed millions)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"the order of a derivative is an int, got {n!r}")
    if n < 0:
        raise ValueError("the order of a derivative cannot be negative")
    if n > MAX_ORDER:
        raise ValueError(f"derivatives of order above {MAX_ORDER} are refused (order {n} was "
                         "asked): their expressions grow at least quadratically with the order")
    f = as_expression(f, [x])
    (x,) = _check_variables([x], [f])
    check_not_constants([x], [f], "the variable of a derivative")
    if n == 1:
        return vjp([f], [1.0], [x])[0]
    for _ in range(n):
        f = jvp([f], [x], [1.0])[0]
    return f
