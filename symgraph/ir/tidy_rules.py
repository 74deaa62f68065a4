"""The display form's pieces (ir/tidy.py): numbers, display nodes, guards and masks, common
factors. `factor_out` and `weight` are `_Tidier` methods, defined here to keep modules small."""

from __future__ import annotations

import math
from fractions import Fraction

from .exact import EULER, PI, form_of
from .node import Node, _intern, const
from .ops import COMPARISONS

LIMIT = 12  # factors (terms) one operand may bring into its parent's product (sum)
_HALF = Fraction(1, 2)
_Q = (int, Fraction)  # exact numbers (ints where whole: far faster than Fractions)
_ATOMS = {"pi": PI, "E": EULER}
_NONNEGATIVE = {"hypot", "abs", "sqrt", "exp", "cosh", "relu", "softplus", "sigmoid", "erfc"}
# Floats the op table's derivative rules write that have a name (log2' is 1/(x*log(2))).
_KNOWN = {math.log(2.0): ("log", 2.0), math.log(10.0): ("log", 10.0)}


def _mk(op: str, *args: Node) -> Node:
    return _intern(op, args, None)


def _norm(x):
    return x.numerator if x.__class__ is Fraction and x.denominator == 1 else x


def _mul(a, b):
    if a.__class__ in _Q and b.__class__ in _Q:
        return a * b
    return float(a) * float(b)


def _add(a, b):
    if a.__class__ in _Q and b.__class__ in _Q:
        return a + b
    return float(a) + float(b)


def _power_of(c, q):
    if c.__class__ in _Q and q.__class__ in _Q and q.denominator == 1:
        if c == 0 and q < 0:
            return None
        return _norm(Fraction(c) ** int(q))
    try:
        value = float(c) ** float(q)
    except (OverflowError, ZeroDivisionError):
        return None
    return value if isinstance(value, float) and math.isfinite(value) else None


def _numeral(value) -> Node:
    """A nonnegative number as display: ``3``, ``1/3`` (a quotient, not a folded float)."""
    if value.__class__ in _Q:
        if value.denominator == 1:
            return const(float(value.numerator))
        return _mk("div", const(float(value.numerator)), const(float(value.denominator)))
    return const(value)


def _rational(node: Node) -> Fraction | None:
    """The rational a display node spells, if it spells one (``3``, ``1/3``, ``-1/2``)."""
    if node.op == "const":
        form = form_of(node.value)
        return _norm(form[0]) if form is not None and not form[1] else None
    if node.op == "neg":
        inner = _rational(node.args[0])
        return None if inner is None else -inner
    if node.op == "div" and node.args[0].op == node.args[1].op == "const":
        a, b = _rational(node.args[0]), _rational(node.args[1])
        return _norm(Fraction(a) / b) if a is not None and b else None
    return None


def _nonnegative(node: Node) -> bool:
    if node.op in _NONNEGATIVE:
        return True
    if node.op == "pow":
        q = _rational(node.args[1])
        return q is not None and q.denominator == 1 and q.numerator % 2 == 0
    return False


def _factor_key(item):
    base = item[0]
    if base.op == "const":
        return (0, "", base.digest)
    if base.op == "symbol":
        return (1, base.value, b"")
    if base.op == "pow" and base.args[0].op == "symbol":
        return (1, base.args[0].value, base.digest)
    return (2, "", base.digest)



def _trade_cost(k: int, e, symbolic: list, bf: list, here: dict) -> float:
    """How complex a power of a product is after trading `k` whole powers with its factors:
    factors left (a power counts more), and the exponent's constant (a negative root)."""
    total = (e + k != 0) if symbolic else 0.25 * (e + k < 0)
    for b, p in bf:
        left = here[b] - k * p
        total += (left != 0) + (abs(left) != 1 and left != 0) * 0.5
    return total


def _merge_masks(nodes: list[Node], signs: list[bool]) -> tuple[list, list]:
    """``where(c, a, 0) + where(c, 0, b)`` is ``where(c, a, b)``: one mask, printed once."""
    halves: dict[Node, list] = {}
    for i, n in enumerate(nodes):
        zero = _zero_branch(n)
        if zero is not None:
            halves.setdefault(n.args[0], [None, None])[2 - zero] = i
    done = set()
    for cond, (first, second) in halves.items():
        if first is not None and second is not None:
            a, b = nodes[first].args[1], nodes[second].args[2]
            nodes[first] = _mk("where", cond, a, b)
            signs[first] = False
            done.add(second)
    if done:
        nodes = [n for i, n in enumerate(nodes) if i not in done]
        signs = [s for i, s in enumerate(signs) if i not in done]
    return nodes, signs


def _join(nodes: list[Node]) -> Node:
    if not nodes:
        return const(1.0)
    return nodes[0] if len(nodes) == 1 else _mk("mul", *nodes)


def _zero_branch(node: Node) -> int | None:
    """Which branch (1 or 2) of a ``where`` is the number 0, if one is."""
    if node.op != "where":
        return None
    for branch in (2, 1):
        arg = node.args[branch]
        if arg.op == "const" and arg.value == 0.0:
            return branch
    return None


def _unguard(c: Node, a: Node, b: Node) -> Node | None:
    """The value a derivative rule's guard protects: where(h > 0, h, 1) is h, for h >= 0;
    where(x == 0, 1, x) is x and where(x == 0, 0, log(x)) is log(x) (a single point
    replaced; the second is pow's rule in its exponent)."""
    if c.op not in COMPARISONS:
        return None
    x, limit = c.args
    if limit.op != "const":
        return None
    if c.op == "gt" and limit.value == 0.0 and a is x and b.op == "const" and _nonnegative(x):
        return x
    if c.op == "eq" and b is x and a.op == "const":
        return x
    if (c.op == "eq" and limit.value == 0.0 and a.op == "const" and a.value == 0.0
            and b.op == "log" and b.args[0] is x):
        return b
    if c.op == "ne" and a is x and b.op == "const":
        return x
    return None


# -- methods of _Tidier ----------------------------------------------------------------------------


def factor_out(self, groups: dict) -> tuple:
    """``a*x + b*x + c`` is ``x*(a + b) + c``: the heaviest factor that several terms
    have, with what else those terms share, taken out; a factor goes out only where at
    least two terms lose it whole (``x**2 + x**3`` stays), so there are fewer operations.
    Returns ``(node of those terms or None, the other terms)``."""
    items = list(groups.items())
    parts = [self.product(rest) for rest, _ in items]
    exponents = []
    count: dict = {}
    for _, factors in parts:
        found: dict = {}
        for b, e in factors:
            key, e = (b, e) if e.__class__ in _Q else self.split_exponent(b, e)
            found[key] = found.get(key, 0) + e
        exponents.append(found)
        for key in found:
            count[key] = count.get(key, 0) + 1
    candidates = [k for k, n in count.items() if n >= 2]
    if not candidates:
        return None, groups
    best = max(candidates, key=lambda k: (count[k] - 1) * self.weight(
        k if k.__class__ is Node else k[0]))
    subset = [i for i, found in enumerate(exponents) if best in found]
    common = {}
    for key in exponents[subset[0]]:
        values = [exponents[i].get(key) for i in subset]
        if key.__class__ is not Node:  # u**(a + 1) and u**a: u**a goes out, whole or not
            if all(v is not None for v in values):
                common[key] = max(values) if all(v <= 0 for v in values) else min(values)
            continue
        if any(v is None or v == 0 for v in values):
            continue
        if all(v > 0 for v in values):
            m = min(values)
        elif all(v < 0 for v in values):
            m = max(values)
        else:
            continue
        if sum(v == m for v in values) >= 2:
            common[key] = m
    if not common:
        return None, groups
    reduced = []
    for i in subset:
        rc, factors = parts[i]
        left = dict(common)
        rest = []
        for b, e in factors:
            key, q = (b, e) if e.__class__ in _Q else self.split_exponent(b, e)
            if key in left:
                e = q - left.pop(key)  # what a symbolic exponent leaves is a number
            if e != 0:
                rest.append((b, e))
        coefficient = _mul(items[i][1], rc)
        reduced.append((coefficient, self.build_product(1, rest)) if rest
                       else (coefficient, None))
    inner = self.build_sum(reduced)
    factors = []
    for key, m in common.items():
        factors.extend([(key, m)] if key.__class__ is Node else [key, (key[0], m)])
    node = self.build_product(1, [*factors, (inner, 1)])
    chosen = set(subset)
    return node, {rest: c for i, (rest, c) in enumerate(items) if i not in chosen}

def split_exponent(self, base: Node, e: Node) -> tuple:
    """``((base, symbolic part), number)`` of a symbolic exponent: ``u**(n*t - 1)`` is
    ``((u, n*t), -1)``, so that it meets ``u**(n*t)`` as a like factor."""
    terms = self.terms(e)
    q = sum(c for c, r in terms if r is None and c.__class__ in _Q)
    rest = [(c, r) for c, r in terms if not (r is None and c.__class__ in _Q)]
    if len(rest) == len(terms):
        return (base, e), 0
    return (base, self.build_sum(rest)), _norm(q)


def weight(self, node: Node) -> int:
    """About how many characters `node` prints as (iterative, memoized)."""
    known = self.weights.get(node)
    if known is not None:
        return known
    stack = [node]
    while stack:
        n = stack[-1]
        if n in self.weights:
            stack.pop()
            continue
        missing = [a for a in n.args if a not in self.weights]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        inner = sum(self.weights[a] for a in n.args)
        if n.op == "symbol":
            w = len(n.value)
        elif n.op == "const":
            w = 4 if n.value.__class__ is not float else len(repr(n.value)) - (
                2 if n.value.is_integer() else 0)
        elif n.op in ("add", "mul", "div", "pow", "neg"):
            w = inner + {"add": 3, "mul": 1, "div": 1, "pow": 2, "neg": 1}[n.op] * max(
                1, len(n.args) - 1)
        else:
            w = inner + len(n.op) + 2 * len(n.args)
        self.weights[n] = min(w, 10**6)
    return self.weights[node]
