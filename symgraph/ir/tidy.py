"""The display form: the formula a person would write, e.g. ``m*v/(1 - v**2/c**2)**(3/2)``.

`tidy` maps a DAG to another DAG, built for printing only (kernels keep the IEEE-safe graph):
sums and products flattened, numeric coefficients exact and first, like terms and like factors
combined (``u*u*u`` -> ``u**3``, ``sqrt(u)**3`` -> ``u**(3/2)``), negative powers as division,
no double negations, ``expm1(u) + 1`` -> ``exp(u)``, masks as ``where(cond, value, 0)``, and the
guards symgraph's own derivative rules add (``where(hypot > 0, hypot, 1)``) shown as the value
they guard. Display nodes are interned nodes made without the construction rules (``1/2`` stays
a quotient), so the printers need nothing new and shared subexpressions stay shared.

One pass in topological order, each node's factor and term lists memoized and capped at
`LIMIT` entries (a wider operand stays one factor), so the work is linear in the DAG's size and
never recursive. Where a node's sum can also be multiplied out (a factor cancelling inside it),
the form with fewer operations (SymPy's count) is kept; a DAG of up to `_FALLBACK_NODES` nodes
is also tidied without those local choices, and each output keeps the cheaper of the two
(ir/tidy_choice.py). The result has the original's value wherever the original is finite (up to
rounding): ``x*y/y`` shows as ``x``, as SymPy would.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from .exact import form_of, power_form
from .node import Node, const
from .ops import COMPARISONS
from .tidy_choice import chosen_sum, expanded, flip_odd, ops, pick
from .tidy_rules import (
    _ATOMS,
    _HALF,
    _KNOWN,
    _Q,
    LIMIT,
    _add,
    _factor_key,
    _join,
    _merge_masks,
    _mk,
    _mul,
    _norm,
    _numeral,
    _power_of,
    _rational,
    _trade_cost,
    _unguard,
    _zero_branch,
    factor_out,
    split_exponent,
    weight,
)
from .traversal import bulk, topological_order

__all__ = ["tidy", "tidy_many", "LIMIT"]

_FALLBACK_NODES = 2000  # DAGs up to this size are also tidied without the local choices


class _Tidier:
    def __init__(self, choose: bool = True) -> None:
        self.products: dict[Node, tuple] = {}
        self.sums: dict[Node, list] = {}
        self.contents: dict[Node, tuple] = {}
        self.weights: dict[Node, int] = {}
        self.built: set[Node] = set()  # built by build_product with coefficient 1
        self.costs: dict[Node, int] = {}
        self.choose = choose  # multiply factors into sums where that saves operations

    # -- reading display nodes back as factor and term lists ----------------------------------
    def constant(self, value: float) -> tuple:
        form = form_of(value)
        if form is not None:
            coefficient, atoms = form
            return _norm(coefficient), [(const(_ATOMS[a] if a in _ATOMS else float(a)), e)
                                        for a, e in atoms]
        known = _KNOWN.get(abs(value))
        if known is not None:
            return (-1 if value < 0 else 1), [(_mk(known[0], const(known[1])),
                                                       1)]
        return value, []

    def product(self, d: Node) -> tuple:
        """``(coefficient, [(base, exponent), ...])`` of a display node."""
        known = self.products.get(d)
        if known is not None:
            return known
        op = d.op
        result = None
        if op == "const":
            result = self.constant(d.value)
        elif op == "neg":
            c, factors = self.product(d.args[0])
            result = (_mul(c, -1), factors)
        elif op == "mul" or op == "div":
            parts = [self.product(a) for a in d.args]
            if op == "div":
                c, factors = parts[1]
                inverse = _power_of(c, -1)
                if inverse is not None:
                    parts[1] = (inverse, [(b, self.scale(e, -1)) for b, e in factors])
                else:
                    parts = None
            if parts is not None and sum(len(p[1]) for p in parts) <= LIMIT:
                c = 1
                factors = []
                for pc, pf in parts:
                    c = _mul(c, pc)
                    factors.extend(pf)
                result = (c, factors)
        elif op == "pow" or op == "sqrt":
            q = _HALF if op == "sqrt" else _rational(d.args[1])
            if q is not None:
                result = self.power(d.args[0], q)
            elif op == "pow":
                result = (1, [(d.args[0], d.args[1])])
        if result is None:
            result = (1, [(d, 1)])
        self.products[d] = result
        return result

    def power(self, base: Node, q: Fraction) -> tuple:
        c, factors = self.product(base)
        if q.denominator == 1:  # (x*y)**2 is x**2*y**2
            scaled = _power_of(c, q)
            if scaled is not None:
                return scaled, [(b, self.scale(e, q)) for b, e in factors]
        if (c.__class__ in _Q and c > 0 and all(b.op == "const" for b, _ in factors)
                and all(e.__class__ in _Q for _, e in factors)):
            form = power_form((Fraction(c), ()), Fraction(q))  # sqrt(2*pi) is 2**(1/2)*pi**(1/2)
            if form is not None:
                coefficient, atoms = form
                return coefficient, [(const(_ATOMS[a] if a in _ATOMS else float(a)), e)
                                     for a, e in atoms] + [(b, e * q) for b, e in factors]
        if c == 1 and len(factors) == 1 and factors[0][1].__class__ in _Q:
            b, p = factors[0]
            if p.denominator > 1 or p.numerator % 2:  # (x**2)**(1/2) is |x|, not x
                return 1, [(b, p * q)]
        return 1, [(base, q)]

    def scale(self, e, q: Fraction):
        """An exponent times a number: a Fraction, or a display node (``-(a + 1)``)."""
        if e.__class__ in _Q:
            return e * q
        node = self.build_sum([(_mul(c, q), r) for c, r in self.terms(e)])
        r = _rational(node)
        return node if r is None else r

    def terms(self, d: Node) -> list:
        """``[(coefficient, rest), ...]`` of a display node; rest None for the number."""
        known = self.sums.get(d)
        if known is not None:
            return known
        result = None
        if d.op == "add":
            parts = [self.terms(a) for a in d.args]
            if sum(len(p) for p in parts) <= LIMIT:
                result = [t for p in parts for t in p]
        if result is None:
            c, factors = self.product(d)
            if not factors:
                result = [(c, None)]
            elif d.op == "add":  # a sum too wide to flatten: one term
                result = [(1, d)]
            elif (len(factors) == 1 and factors[0][1] == 1 and factors[0][0].op == "add"
                  and c.__class__ in _Q and factors[0][0] is not d):  # 2*(x + 1): 2*x + 2
                result = [(_mul(c, tc), rest) for tc, rest in self.terms(factors[0][0])]
            else:
                rest = self.build_product(1, factors)
                self.built.add(rest)
                result = [(c, rest)]
        self.sums[d] = result
        return result

    # -- building display nodes ---------------------------------------------------------------
    def build_power(self, base: Node, e) -> Node:
        if e.__class__ not in _Q:
            return _mk("pow", base, e)
        if e == 1:
            return base
        if e == _HALF:
            return _mk("sqrt", base)
        return _mk("pow", base, _numeral(e))

    def build_product(self, c, factors: Iterable) -> Node:
        merged: dict[Node, list] = {}  # base -> [rational exponent, symbolic exponents]
        masks, values = [], []
        for base, e in factors:
            zero = _zero_branch(base) if e == 1 else None
            if base.op in COMPARISONS and e == 1:
                masks.append((base, 2))
            elif zero is not None:  # where(c, a, 0)*b is where(c, a*b, 0)
                masks.append((base.args[0], zero))
                values.append(base.args[3 - zero])
            else:
                self.merge(merged, base, e)
        for v in values:
            vc, vf = self.product(v)
            c = _mul(c, vc)
            for base, e in vf:
                self.merge(merged, base, e)
        if c == 0:
            return const(0.0)
        c = self.normalize_sums(c, merged)
        c = self.rebalance_roots(c, merged)
        c = self.flip_odd(c, merged)
        upper, lower, symbolic_up, symbolic_down = [], [], [], []
        for base, (e, symbolic) in merged.items():
            if symbolic:  # x**a * x is x**(a + 1)
                terms = symbolic + ([(e, None)] if e != 0 else [])
                exponent = self.build_sum(terms)
                q = _rational(exponent)
                if q is None:
                    if all(c < 0 for c, _ in terms):  # x**(-a - 1) is 1/x**(a + 1)
                        symbolic_down.append((base, self.build_sum(
                            [(_mul(c, -1), r) for c, r in terms])))
                    else:
                        symbolic_up.append((base, exponent))
                    continue
                e = q
            if e == 0:
                continue
            if base.op == "const" and e.denominator == 1 and base.value.__class__ is float:
                folded = _power_of(Fraction(base.value), e) if base.value.is_integer() else None
                if folded is not None:  # 2**3 is a coefficient
                    c = _mul(c, folded)
                    continue
            if base.op == "const" and e.denominator > 1 and c.__class__ in _Q and \
                    base.value.__class__ is float and base.value.is_integer():
                p = int(base.value)  # sqrt(2)/4 is 1/(2*sqrt(2))
                if e > 0 and c.denominator % p == 0:
                    c, e = c * p, e - 1
                elif e < 0 and c.numerator % p == 0:
                    c, e = Fraction(c) / p, e + 1
            (upper if e > 0 else lower).append((base, abs(e)))
        negative = c < 0
        c = -c if negative else c
        top = self.side(upper + symbolic_up, c.numerator if c.__class__ in _Q else c)
        bottom = self.side(lower + symbolic_down, c.denominator if c.__class__ in _Q else 1)
        node = _join(top)
        if bottom:
            node = _mk("div", node, _join(bottom))
        if negative:
            node = _mk("neg", node)
        for mask, zero in masks:
            node = _mk("where", mask, *((node, const(0.0)) if zero == 2 else (const(0.0), node)))
        return node

    def content(self, base: Node) -> tuple:
        """``(k, s)`` with ``base == k*s``: a sum's common number and sign taken out
        (``2*x - 2`` is ``2*(x - 1)``), so that like factors meet."""
        known = self.contents.get(base)
        if known is not None:
            return known
        result = (1, base)
        terms = self.terms(base)
        if all(c.__class__ in _Q for c, _ in terms) and len(terms) > 1:
            numerators = math.gcd(*[c.numerator for c, _ in terms])
            denominators = math.lcm(*[c.denominator for c, _ in terms])
            k = Fraction(numerators, denominators)
            if all(c < 0 for c, _ in terms):
                k = -k
            if k.denominator != 1 and any(abs(c / k) != 1 for c, _ in terms):
                k = -1 if k < 0 else 1  # r + sigma**2/2 stays as it is
            if k != 1 and k != 0:
                result = (k, self.build_sum([(c / k, rest) for c, rest in terms]))
        self.contents[base] = result
        return result

    def normalize_sums(self, c, merged: dict):
        for base in [b for b in merged if b.op == "add"]:
            e, symbolic = merged[base]
            if symbolic or e.denominator != 1 or e == 0:
                continue
            k, normal = self.content(base)
            if normal is not base:
                del merged[base]
                c = _mul(c, _power_of(k, int(e)))
                self.merge(merged, normal, e)
        return c

    def rebalance_roots(self, c, merged: dict):
        """``L/(g**2*sqrt(L/g))`` is ``sqrt(L/g)/g`` and ``x*(x/y)**(k - 1)/y`` is
        ``(x/y)**k``: a power of a product trades whole powers with that product's factors
        when fewer factors (or a simpler exponent) remain."""
        for base in [b for b, (e, s) in merged.items() if s or e.denominator > 1]:
            e, symbolic = merged[base]
            bc, bf = self.product(base)
            if (bc.__class__ not in _Q or bc <= 0 or not 1 <= len(bf) <= 8
                    or (len(bf) == 1 and bc == 1)
                    or any(p.__class__ not in _Q or p.denominator > 1 for _, p in bf)):
                continue
            here = {}
            for b, _ in bf:
                slot = merged.get(b)
                if slot is not None and slot[1]:
                    break
                here[b] = slot[0] if slot is not None else 0
            else:
                best = min((-1, 0, 1), key=lambda k: (_trade_cost(k, e, symbolic, bf, here),
                                                      abs(k)))
                if best:
                    merged[base][0] += best
                    for b, p in bf:
                        self.merge(merged, b, -best * p)
                    c = _mul(c, _power_of(bc, -best))
        return c

    def merge(self, merged: dict, base: Node, e) -> None:
        """Add the exponent `e` (a Fraction or a display node) to `base`'s entry."""
        slot = merged.get(base)
        if slot is None:
            slot = merged[base] = [0, []]
        if e.__class__ in _Q:
            slot[0] = _norm(slot[0] + e)
            return
        for c, r in self.terms(e):
            if r is None and c.__class__ in _Q:
                slot[0] = _norm(slot[0] + c)
            else:
                slot[1].append((c, r))

    def side(self, items: list, number) -> list:
        """One side of a quotient: the number, then the factors; constants' roots as one sqrt."""
        roots = [b for b, e in items if e == _HALF and b.op == "const"]
        rest = sorted(((b, e) for b, e in items if not (e == _HALF and b.op == "const")),
                      key=_factor_key)
        nodes = [const(float(number))] if number != 1 else []
        nodes += [self.build_power(b, e) for b, e in rest]
        if roots:
            nodes.insert(1 if number != 1 else 0, _mk("sqrt", _join(roots)))
        return nodes

    def build_sum(self, terms: list) -> Node:
        groups: dict[Node, object] = {}
        number = 0
        for c, rest in terms:
            if rest is None:
                number = _add(number, c)
            else:
                groups[rest] = _add(groups.get(rest, 0), c)
        for rest, c in list(groups.items()):  # expm1(u) + 1 is exp(u)
            if rest.op == "expm1" and number != 0 and c == number:
                del groups[rest]
                number = 0
                exp = _mk("exp", rest.args[0])
                groups[exp] = _add(groups.get(exp, 0), c)
                break
        groups = {rest: c for rest, c in groups.items() if c != 0}
        if len(groups) > 2 and all(c.__class__ in _Q for c in groups.values()) and \
                number.__class__ in _Q:
            k = Fraction(math.gcd(*[c.numerator for c in groups.values()], number.numerator))
            if k > 1 and all(c.denominator == 1 for c in groups.values()) and \
                    number.denominator == 1:  # 2*(a + b - c), not 2*a + 2*b - 2*c
                inner = self.build_sum([(c / k, r) for r, c in groups.items()] + [(number / k,
                                                                                 None)])
                return self.build_product(k, [(inner, 1)])
        nodes, signs = [], []
        while len(groups) > 1:  # a*x + b*x + c*y + d*y is x*(a + b) + y*(c + d)
            factored, groups = self.factor_out(groups)
            if factored is None:
                break
            nodes.append(factored)
            signs.append(factored.op == "neg")
        for rest, c in groups.items():
            if c == 1 and rest in self.built:  # already in its display form
                nodes.append(rest)
            else:
                rc, rf = self.product(rest)
                nodes.append(self.build_product(_mul(c, rc), rf))
            signs.append(c < 0)
        if number != 0 or not nodes:
            nodes.append(self.build_product(number, []))
            signs.append(number < 0)
        nodes, signs = _merge_masks(nodes, signs)
        if signs[0] and not all(signs):  # lead with a positive term: 1 - x, not -x + 1
            first = signs.index(False)
            nodes.insert(0, nodes.pop(first))
        return nodes[0] if len(nodes) == 1 else _mk("add", *nodes)
    factor_out = factor_out
    split_exponent = split_exponent
    weight = weight
    ops = ops
    expanded = expanded
    chosen_sum = chosen_sum
    flip_odd = flip_odd

    # -- one original node --------------------------------------------------------------------
    def node(self, n: Node, shown: dict[Node, Node]) -> Node:
        op = n.op
        if op == "symbol":
            return n
        if op == "const":
            return self.build_sum([(c, None) if not f else (c, self.build_product(1, f))
                                   for c, f in [self.constant(n.value)]])
        args = [shown[a] for a in n.args]
        if op == "where":
            guarded = _unguard(*args)
            if guarded is not None:
                return guarded
        if op == "pow_prev" and n.args[2].op == "pow" and n.args[2].args == n.args[:2]:
            # of x**y itself: x**(y - 1), however kernels compute it (ir/powers.py)
            exponent = self.chosen_sum(self.terms(_mk("add", args[1], const(-1.0))))
            op, args = "pow", [args[0], exponent]
        raw = _mk(op, *args)
        if op in ("add", "mul", "neg", "div", "pow", "sqrt"):
            return self.chosen_sum(self.terms(raw))
        return raw


@bulk
def tidy_many(outputs: Sequence[Node], keep: Iterable[Node] = ()) -> list[Node]:
    """The display form of each output; nodes in `keep` stay whole (their own lines in the
    shared form) instead of merging into the sums and products that use them. The local
    choices can add operations further up, so the outputs without them are the fallback."""
    kept = set(keep)
    order = topological_order(list(outputs))
    chosen = _tidy_all(outputs, order, kept, _Tidier())
    if len(order) > _FALLBACK_NODES:  # a formula to read, not a 10**4-node one: time first
        return chosen
    greedy = _tidy_all(outputs, order, kept, _Tidier(choose=False))
    return pick(chosen, greedy, bool(kept), _Tidier())


def _tidy_all(outputs: Sequence[Node], order: list[Node], kept: set,
              tidier: _Tidier) -> list[Node]:
    shown: dict[Node, Node] = {}
    for n in order:
        d = tidier.node(n, shown)
        if n in kept and d.args and d.op != "neg":  # one factor, one term: its own line
            tidier.products[d] = (1, [(d, 1)])
            tidier.sums[d] = [(1, d)]
        elif d.args:  # memoized now, so reading a later node back never descends far
            tidier.product(d)
            tidier.terms(d)
        shown[n] = d
    return [shown[o] for o in outputs]


def tidy(node: Node) -> Node:
    """The display form of `node` (see the module docstring)."""
    return tidy_many([node])[0]

