"""A node's adjoint terms with a common factor taken out: ``a*b1 + a*b2 + c`` is
``a*(b1 + b2) + c``.

Reverse mode sums a node's contributions, one ``adjoint * partial`` a use. When the uses share
a factor (a data loss's parameter meets ``exp(-log_sigma)`` in every term), the plain sum
multiplies by it once a term. Taking it out leaves one multiplication, the rounding of a sum
of products either way. Sums of three or more terms only: for two, the products are already
made, so one multiplication saved costs two nodes made. The scale benchmark's 10,000-node
DAG's gradient (callgrind): 657M instructions without factoring, 689M with it (+5%), 711M
with two-term sums too; its program the same size.

The factor taken is the one most terms share (ties: the first seen, so programs are the same
from run to run); then the next among the terms left, until no factor is shared. The terms
with it are summed first (they are not factored again: one level, bounded work per node).
Found on FIT gauss_loglik (a batch loser against JAX); value_grad operations before -> after
over all 48 families at ~10, 100 and 1,000 operations: none grew, 23 of 135 shrank; FIT
gauss_loglik@24 212 -> 190 (multiplications 95 -> 73), @259 2,263 -> 2,014; held out
cubic_eos@41 8,251 -> 6,651, student_t@144 2,275 -> 2,134, student_t_dof@142 2,832 -> 2,691.
Adjoints that are used whole elsewhere (`computed`) and terms that occur twice stay as they
are: without those two rules minimal_surface and censored_normal grew by up to 18%.
"""

from __future__ import annotations

from ..ir.node import Node, apply, combine


def _factors(term: Node, computed: set[Node]) -> tuple[bool, tuple[Node, ...]] | None:
    """(negated, factors) of a product or a negated product not in `computed` (an adjoint the
    program uses whole elsewhere: taking it apart would compute its product twice), else
    None."""
    negated = term.op == "neg"
    inner = term.args[0] if negated else term
    return (negated, inner.args) if inner.op == "mul" and inner not in computed else None


def _without(factors: tuple[Node, ...], f: Node) -> Node:
    """The product of `factors` with one `f` left out."""
    i = next(k for k, g in enumerate(factors) if g is f)
    rest = factors[:i] + factors[i + 1:]
    return rest[0] if len(rest) == 1 else combine("mul", rest)


def factored(terms: list[Node], computed: set[Node]) -> list[Node]:
    """`terms` (to be summed) with factors shared by two or more products taken out; the same
    list when none is shared. Products in `computed` (adjoints passed whole to two or more
    arguments, or the gradient's own outputs: values the program has anyway) stay whole."""
    if len(terms) < 3:  # two terms: not worth the nodes (the module's docstring)
        return terms
    factors: list[Node] = []
    for t in terms:  # an early out: is any factor in two products? (most sums: no)
        inner = t.args[0] if t.op == "neg" else t
        if inner.op == "mul" and inner not in computed:
            factors += inner.args
    if len(set(factors)) == len(factors):
        return terms
    seen: dict[Node, int] = {}
    for t in terms:
        seen[t] = seen.get(t, 0) + 1
    # a term twice (x*x's two equal partials) stays whole: the sum's rules make it 2*term
    parts = [_factors(t, computed) if seen[t] == 1 else None for t in terms]
    out: list[Node] = []
    left = list(range(len(terms)))
    while True:
        counts: dict[Node, int] = {}
        for k in left:
            if parts[k] is not None:
                for f in dict.fromkeys(parts[k][1]):  # a factor once a term
                    counts[f] = counts.get(f, 0) + 1
        best = max(counts, key=counts.__getitem__, default=None)  # the first of the most
        if best is None or counts[best] < 2:
            break
        rests, kept = [], []
        for k in left:
            p = parts[k]
            if p is not None and any(g is best for g in p[1]):
                rest = _without(p[1], best)
                rests.append(apply("neg", rest) if p[0] else rest)
            else:
                kept.append(k)
        out.append(combine("mul", (best, combine("add", rests))))
        left = kept
    return out + [terms[k] for k in left] if out else terms
