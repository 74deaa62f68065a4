"""Cost-based choices of the display form (ir/tidy.py): a factor multiplied into a sum where
its pieces cancel (``2*c*m*(1/u - v**2/(2*c**2*u**3))`` is ``2*c*m/u - m*v**2/(c*u**3)``), kept
only where the result has fewer operations. `ops` and `expanded` are `_Tidier` methods, defined
here to keep modules small; each looks one level deep, so the work per node stays bounded."""

from __future__ import annotations

from .node import Node
from .tidy_rules import _Q, LIMIT, _mk, _mul

# Operations as SymPy's count_ops counts them: one per operator of the printed tree; a root
# or fractional power is two (POW and DIV), as is a leading minus before a sum's terms.
_EXTRA = {"sqrt": 2}


def _exp_of_minus(node: Node) -> bool:
    return node.op == "exp" and node.args[0].op == "neg"


def ops(self, node: Node) -> int:
    """Operations of the printed tree of `node` (iterative, memoized; shared nodes count
    once per use, as in the printed text)."""
    known = self.costs.get(node)
    if known is not None:
        return known
    stack = [node]
    while stack:
        n = stack[-1]
        if n in self.costs:
            stack.pop()
            continue
        missing = [a for a in n.args if a not in self.costs]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        inner = sum(self.costs[a] for a in n.args)
        op = n.op
        if op in ("symbol", "const"):
            c = 0
        elif op == "div" and n.args[0].op == "const" and n.args[1].op == "const":
            c = 1  # a rational: one DIV where it is an exponent, none as a coefficient
        elif op == "add":  # x - y is one SUB, not ADD and NEG; -x - y is NEG and SUB
            negs = sum(a.op == "neg" for a in n.args)
            c = inner + len(n.args) - 1 - negs + all(
                a.op == "neg" or a.op == "const" and a.value < 0 for a in n.args)
        elif op == "mul":  # x*exp(-u) is x/exp(u): DIV for MUL and NEG
            c = inner + len(n.args) - 1 - sum(_exp_of_minus(a) for a in n.args)
        else:
            c = inner + _EXTRA.get(op, 1)
            if (op == "sqrt" or op == "pow" and n.args[1].op == "div") and \
                    n.args[0].op == "mul" and n.args[0].args[0].op == "const":
                c += 2  # SymPy splits sqrt(2*T) into sqrt(2)*sqrt(T)
        self.costs[n] = min(c, 10**6)
    return self.costs[node]


def chosen_sum(self, terms: list) -> Node:
    """The sum of `terms`, or of the terms multiplied out where that has fewer operations."""
    node = self.build_sum(terms)
    wide = self.expanded(terms) if self.choose else None
    if wide is not None:
        other = self.build_sum(wide)
        if (self.ops(other), self.weight(other)) < (self.ops(node), self.weight(node)):
            node = other
    return node


def pick(chosen: list, greedy: list, shared: bool, costs) -> list:
    """The outputs with the local choices, or without them where those have fewer operations
    (a choice can add operations further up); shared lines take one form for all."""
    if chosen == greedy:
        return chosen
    if not shared:
        return [a if (costs.ops(a), costs.weight(a)) <= (costs.ops(b), costs.weight(b)) else b
                for a, b in zip(chosen, greedy)]
    score = [(sum(costs.ops(d) for d in forms), sum(costs.weight(d) for d in forms))
             for forms in (chosen, greedy)]
    return chosen if score[0] <= score[1] else greedy


def expanded(self, terms: list) -> list | None:
    """`terms` with each product that has a sum as a factor multiplied out (one sum per
    term, one level), so that like factors cancel and like terms combine; None if no term
    has one or the result would be too wide."""
    out = []
    changed = False
    for c, rest in terms:
        if rest is None:
            out.append((c, rest))
            continue
        rc, factors = self.product(rest)
        at = next((i for i, (b, e) in enumerate(factors) if e == 1 and b.op == "add"), None)
        if at is None or len(factors) < 2 and rc == 1:
            out.append((c, rest))
            continue
        others = factors[:at] + factors[at + 1:]
        inner = self.terms(factors[at][0])
        k = _mul(c, rc)
        if len(inner) > LIMIT:
            out.append((c, rest))
            continue
        for tc, tr in inner:
            if tr is None:
                out.append((_mul(k, tc), self.build_product(1, others) if others else None))
                continue
            trc, trf = self.product(tr)
            merged = self.build_product(1, others + list(trf))
            mc, mf = self.product(merged)
            if not mf:
                out.append((_mul(_mul(k, tc), _mul(trc, mc)), None))
            else:
                out.append((_mul(k, _mul(tc, trc)), merged))
        changed = True
    if not changed or len(out) > 2 * LIMIT:
        return None
    return out


_ODD = {"sign", "sin", "tan", "sinh", "tanh", "asin", "atan", "asinh", "atanh", "erf", "erfinv",
        "cbrt"}


def flip_odd(self, c, merged: dict):
    """``-sign(x - mu)`` is ``sign(mu - x)``: a negative product's odd function of a difference
    takes the minus (one operation fewer). Returns the new coefficient."""
    if not c < 0:
        return c
    for base, (e, symbolic) in list(merged.items()):
        if (symbolic or base.op not in _ODD or base.args[0].op != "add"
                or e.__class__ not in _Q or e.denominator != 1 or e.numerator % 2 == 0):
            continue
        terms = self.terms(base.args[0])
        if not any(tc < 0 for tc, _ in terms):
            continue
        flipped = _mk(base.op, self.build_sum([(_mul(tc, -1), r) for tc, r in terms]))
        del merged[base]
        self.merge(merged, flipped, e)
        return _mul(c, -1)
    return c
