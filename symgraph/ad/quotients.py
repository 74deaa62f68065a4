"""Division chains in reverse mode, taken apart as SymPy's algebra cancels them.

A quotient ``out = a / b`` passes ``g / b`` to a and ``-g * out / b`` to b. Left to the plain
products, every quotient costs two divisions per sweep, terms over one divisor are divided one
by one, and chains through exp and log multiply by a value they have just divided by (weibull:
``lam * (-(d/lam) / lam)`` and ``(1 / u) * u``). Here (`symgraph.ad.differentiate.vjp` calls):

* a quotient whose divisor is no other quotient's: one division ``s = g / b`` for both
  partials, ``-s * out`` for b (as JAX and PyTorch do);
* a divisor of several quotients: each term ``(g * -out) / b`` and the node's terms over one
  divisor summed first, then divided once (`summed`);
* ``(s / x) * x`` through exp (whose partial is its own value) is s; ``q * (g * c / q)`` (log's
  partial) is ``g * c`` and ``q * pow_prev(q, y, p)`` is p in a quotient's denominator term;
* ``(s / cosh(v)) * sinh(v)`` (log(cosh(v))'s chain) is ``s * tanh(v)``;
* ``(s / q) * (c / q)``, a constant over q (sqrt's ``0.5 / out``) times an adjoint over the
  same q, is ``(s * c) / (q * q)``: ``c / sqrt(u)``'s gradient divides once, not twice;
* a fresh partial ``a / q`` (hypot's ``x / h``, ``y / h``; atan2's two over ``x*x + y*y``)
  is ``(adjoint / q) * a``: one division of the adjoint for both arguments.

Each rewrite keeps the derivative within an ulp or two of the plain products where those are
finite, and is finite at more points (x = 0 or inf, where a product of 0 and inf was nan).
FIT families, value_grad divisions (all steps) before -> after: weibull@14 42 -> 14, the
value's d/lam alone (313 -> 227 steps, 28 -> 14 pow with pow_prev), gibbs_mixing@25 76 -> 52
(373 -> 299), arrhenius@31 62 -> 32 (998 -> 937); VALIDATE: student_t@14 57 -> 43 (256 ->
227), einstein_solid@12 61 -> 38 (276 -> 229), rational@14 42 -> 28, yield_curve@7 35 -> 22.
The last two rules (found on FIT coulomb, a batch loser on AVX2): coulomb@2 3 -> 2, @6 45 ->
30; held out bond_angles@10 36 -> 18 (263 -> 245 steps), nbody@6 60 -> 45 (239 -> 224); no
family's count grew. Batch value+gradient on one core, Zen 3, old and new in one process:
coulomb@2 1.09x, @6 1.15x, bond_angles@10 1.09x, nbody@6 1.07x, lennard_jones@4 1.00x.
"""

from __future__ import annotations

from ..ir.node import Node, apply, combine
from .factoring import factored


def product(node: Node, adjoint: Node, partial: Node) -> Node:
    """``adjoint * partial``, with the division chains SymPy's algebra cancels taken apart:
    ``a * (-out / q)`` is ``(a * -out) / q`` (one rounding less; a node's terms over one q
    then share one division, `summed`), and ``(s / x) * x`` through an op whose partial is
    its own value (exp: x > 0 unless it under- or overflowed, where the quotient was inf or
    nan anyway) is s."""
    if partial is node and adjoint.op == "div" and adjoint.args[1] is node:
        return adjoint.args[0]
    op = partial.op
    if op == "div":  # (each rule below reads a quotient partial: one test for all)
        p, q = partial.args
        if p.op == "const" and adjoint.op == "div" and adjoint.args[1] is q:
            # (s / q) * (c / q): sqrt's 0.5 / out
            return apply("div", combine("mul", (adjoint.args[0], p)), combine("mul", (q, q)))
        if _of_output(p, node):  # a quotient's -out / b
            numerator = _times_output(adjoint, node)
            if p is not node:
                numerator = apply("neg", numerator)
            return apply("div", numerator, q)
        if p.op != "const" and q.op != "const" and not any(partial is a for a in node.args):
            # a fresh a / q (not a product's own factor; hypot's and atan2's partials share
            # q): the adjoint over q, once
            return combine("mul", (apply("div", adjoint, q), p))
    elif op == "sinh" and node.op == "cosh" and partial.args[0] is node.args[0]:
        through = _over_cosh(node, adjoint)
        if through is not None:
            return through
    return combine("mul", (adjoint, partial))


def _over_cosh(node: Node, adjoint: Node) -> Node | None:
    """``adjoint * sinh(v)`` for node = cosh(v), its terms over cosh(v) (log's partial:
    ``s / cosh(v)``, ``g * (c / cosh(v))``) times tanh(v) instead: d/dv log(cosh(v)) is one
    tanh, not a sinh and a division, and stays finite (+-1) where cosh overflows (|v| > 710:
    inf / inf before). None if no term has that divisor. VALIDATE: logcosh_regression,
    catenary_chain (held out)."""
    v = node.args[0]
    terms = adjoint.args if adjoint.op == "add" else (adjoint,)
    parts, tanh = [], None
    for t in terms:
        kept = t.args[0] if t.op == "div" and t.args[1] is node else _without(t, node)
        if kept is None:
            parts.append(combine("mul", (t, v.call("sinh"))))
        else:
            tanh = tanh or v.call("tanh")
            parts.append(combine("mul", (kept, tanh)))
    if tanh is None:
        return None
    return parts[0] if len(parts) == 1 else combine("add", parts)


def shared_divisors(order: list[Node]) -> set[Node]:
    """Divisors of two or more quotients: their adjoint's terms share one division
    (`summed`), so a quotient's partials over them stay ``1/b`` and ``(g * -out) / b``."""
    seen: set[Node] = set()
    shared: set[Node] = set()
    for n in order:
        if n.op == "div":
            (shared if n.args[1] in seen else seen).add(n.args[1])
    return shared


def _times_output(adjoint: Node, q: Node) -> Node:
    """``adjoint * q`` for a quotient q, its terms ``g * (c / q)`` (log(q)'s partial) made
    ``g * c`` and ``g * pow_prev(q, y, p)`` (q**y's) made ``g * p``: d/db log(a / b) is -1/b and
    d/db (a / b)**y is -y (a/b)**y / b also where a / b under- or overflowed (0 * inf before).
    FIT: weibull@14's gradient 28 -> 0 divisions (pow_prev 14 -> 0)."""
    terms = adjoint.args if adjoint.op == "add" else (adjoint,)
    cancelled = [_without(t, q) for t in terms]
    if all(c is None for c in cancelled):
        return combine("mul", (adjoint, q))
    parts = [combine("mul", (t, q)) if c is None else c for t, c in zip(terms, cancelled)]
    return parts[0] if len(parts) == 1 else combine("add", parts)


def _without(term: Node, q: Node) -> Node | None:
    """``term * q`` with q cancelled against a factor ``c / q`` or ``pow_prev(q, y, p)`` of
    `term`, or None if it has neither."""
    if term.op == "neg":
        inner = _without(term.args[0], q)
        return None if inner is None else apply("neg", inner)
    factors = term.args if term.op == "mul" else (term,)
    for i, f in enumerate(factors):
        if f.op == "div" and f.args[1] is q and f.args[0].is_const:
            rest = factors[:i] + factors[i + 1:] + (f.args[0],)
        elif f.op == "pow_prev" and f.args[0] is q:
            rest = factors[:i] + (f.args[2],) + factors[i + 1:]
        else:
            continue
        return rest[0] if len(rest) == 1 else apply("mul", *rest)
    return None


def _of_output(p: Node, node: Node) -> bool:
    """Whether p is `node` or its negation: a partial made of the output (a fresh quotient,
    not a value of the program that a rewrite would compute twice)."""
    return p is node or (p.op == "neg" and p.args[0] is node)


def summed(terms: list[Node], computed: set[Node]) -> Node:
    """``sum(terms)``, the terms over one divisor q as one quotient: ``(a + b) / q``, and
    factors shared by two or more terms taken out (`factoring`; `computed`: the adjoints so
    far, products kept whole)."""
    if len(terms) == 2:  # the commonest: unless both are quotients over one q, a plain sum
        a, b = terms
        if a.op != "div" or b.op != "div" or a.args[1] is not b.args[1] or (
                a.args[1].op == "const"):
            return _added(terms, computed)
    over: dict[Node, list[Node]] = {}
    for t in terms:
        if t.op == "div" and t.args[1].op != "const":
            over.setdefault(t.args[1], []).append(t.args[0])
    if all(len(v) < 2 for v in over.values()):
        return _added(terms, computed)
    out: list[Node] = []
    done: set[Node] = set()
    for t in terms:
        q = t.args[1] if t.op == "div" else None
        if q is None or len(over.get(q, ())) < 2:
            out.append(t)
        elif q not in done:  # the first term over q: all of them, once
            done.add(q)
            out.append(apply("div", _added(over[q], computed), q))
    return _added(out, computed)


def _added(terms: list[Node], computed: set[Node]) -> Node:
    """The sum of `terms`, factors two or more of them share taken out (`factoring`)."""
    terms = factored(terms, computed)
    return terms[0] if len(terms) == 1 else combine("add", terms)
