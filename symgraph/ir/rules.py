"""The construction rules: what `apply` makes of an operation and its argument nodes.

Only light rules that keep IEEE meaning (up to the sign of a zero: ``x + 0`` is ``x`` even for
``x = -0.0``): constants fold (with NumPy semantics, so ``1/0`` folds to ``inf``), ``x+0``,
``x*1``, ``x**1``, ``x**0``, ``--x``, n-ary ``add``/``mul`` flatten (nested ones of up to
`FLATTEN_LIMIT` operands), and like terms collect (``x + x`` is ``2*x``). ``x*0`` and ``x-x``
are kept: they are ``nan`` when ``x`` is infinite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .exact import fold as _exact_fold
from .intern import Node, _as_node, _intern, _op_node, const
from .ops import COMPARISONS, OPS

# -- construction rules ----------------------------------------------------------------------
# Each rule takes the argument nodes and returns a finished Node, or a tuple of (new) arguments.

_ADD_RANK = {"pow": 0, "mul": 1, "symbol": 2, "const": 9}
_MUL_RANK = {"const": 0, "symbol": 1, "pow": 2}


def _order_key(rank: dict[str, int]):
    # Readable canonical order: by kind, symbols by name, everything else by digest.
    def key(node: Node):
        r = rank.get(node.op, 3)
        return (r, node.value if node.op == "symbol" else "", node.digest)

    return key


_ADD_KEY, _MUL_KEY = _order_key(_ADD_RANK), _order_key(_MUL_RANK)


def _in_order(a: Node, b: Node, rank: dict[str, int]) -> tuple[Node, Node]:
    """(a, b) sorted by the key of `rank` (`_order_key`), without building the keys."""
    oa, ob = a.op, b.op
    ra, rb = rank.get(oa, 3), rank.get(ob, 3)
    if ra != rb:
        return (a, b) if ra < rb else (b, a)
    if oa != "symbol" and ob != "symbol":  # the common case: by digest
        return (a, b) if a.digest <= b.digest else (b, a)
    if oa == "symbol" and ob == "symbol" and a.value != b.value:
        return (a, b) if a.value < b.value else (b, a)
    # a name against "" (or the same name)
    ka, kb = (a.value if oa == "symbol" else "", a.digest), (
        b.value if ob == "symbol" else "", b.digest)
    return (a, b) if ka <= kb else (b, a)


# A nested sum (product) is flattened into its parent only up to this many operands. Wider
# ones stay one operand: flattening copies them, which recomputes a shared partial sum at every
# use and makes loops like ``y = y + h*f(y)`` quadratic. Small sums stay canonical.
FLATTEN_LIMIT = 8


def _flatten(op: str, args: Sequence[Node]) -> list[Node]:
    flat: list[Node] = []
    for arg in args:
        if arg.op == op and len(arg.args) <= FLATTEN_LIMIT:
            flat.extend(arg.args)
        else:
            flat.append(arg)
    return flat


def _fold(op: str, numbers: list[float]) -> float:
    if op == "neg" and numbers[0].__class__ is float:  # float64's negation, as NumPy's
        return -numbers[0]
    if len(numbers) == 2 and numbers[0].__class__ is float and numbers[1].__class__ is float:
        if op == "add":  # plain floats: nothing exact to keep (`exact.fold` says None)
            return numbers[0] + numbers[1]
        if op == "mul":
            return numbers[0] * numbers[1]
    exact = _exact_fold(op, numbers)  # 1/3, sqrt(2*pi): kept exact, valued correctly rounded
    if exact is not None:
        return exact
    if op == "add" or op == "mul":  # Python floats round and overflow as float64 does
        total = numbers[0]
        for number in numbers[1:]:
            total = total + number if op == "add" else total * number
        return total
    with np.errstate(all="ignore"):
        return float(OPS[op].evaluate(*[np.float64(v) for v in numbers]))


def _split_coefficient(term: Node) -> tuple[float, Node]:
    """``3*x*y -> (3, x*y)``, ``-x -> (-1, x)``, ``x -> (1, x)``."""
    if term.op == "neg":
        coefficient, rest = _split_coefficient(term.args[0]) if term.args[0].op == "mul" else (
            1.0, term.args[0])
        return _fold("neg", [coefficient]), rest
    if term.op == "mul" and term.args[0].op == "const":
        rest = term.args[1:]
        return term.args[0].value, rest[0] if len(rest) == 1 else _intern("mul", rest, None)
    return 1.0, term


def _rule_add(args):
    if len(args) == 2:  # the common case, in derivatives above all: two unrelated terms
        a, b = args
        if a is not b:
            # Two lone terms (no coefficient to collect, nothing to flatten or fold): ordered.
            oa, ob = a.op, b.op
            if (oa != "add" and oa != "const" and oa != "neg"
                    and not (oa == "mul" and a.args[0].op == "const")
                    and ob != "add" and ob != "const" and ob != "neg"
                    and not (ob == "mul" and b.args[0].op == "const")):
                return _op_node("add", _in_order(a, b, _ADD_RANK))
            # t + c, a term that is no sum: nothing to collect, the constant goes last
            if b.op == "const" and a.op != "const" and a.op != "add":
                return a if b.value == 0.0 else args
            if a.op == "const" and b.op != "const" and b.op != "add":
                return b if a.value == 0.0 else (b, a)
            # two terms that are no sums or constants, of different rests: nothing to collect
            ra, rb = _plain_rest(a), _plain_rest(b)
            if ra is not None and rb is not None and ra is not rb and a.op != "const" \
                    and b.op != "const" and a.op != "add" and b.op != "add":
                return _op_node("add", _in_order(a, b, _ADD_RANK))
    terms = _flatten("add", args)
    numbers = [t.value for t in terms if t.op == "const"]
    terms = [t for t in terms if t.op != "const"]
    groups: dict[Node, list] = {}  # rest -> [(coefficient, original term), ...]
    for term in terms:
        coefficient, rest = _split_coefficient(term)
        group = groups.get(rest)
        if group is None:
            groups[rest] = [(coefficient, term)]
        else:
            group.append((coefficient, term))
    if len(groups) < len(terms):  # like terms to collect
        terms = []
        for rest, group in groups.items():
            if len(group) == 1:
                terms.append(group[0][1])
                continue
            # Summed only where terms are collected (most groups have one), in term order
            coefficient, originals = 0.0, [term for _, term in group]
            for c, _ in group:
                coefficient = _fold("add", [coefficient, c])
            if coefficient == 0.0:  # x - x stays (nan for infinite x), as two terms however
                terms.extend(originals if len(originals) == 2 else (rest, apply("neg", rest)))
            else:
                terms.append(apply("mul", coefficient, rest))
    if numbers:
        total = _fold("add", numbers) if len(numbers) > 1 else numbers[0]
        if total != 0.0 or not terms:
            terms.append(const(total))
    if not terms:
        return const(0.0)
    return terms[0] if len(terms) == 1 else tuple(sorted(terms, key=_ADD_KEY))


def _plain_rest(term: Node) -> Node | None:
    """`_split_coefficient(term)[1]` where it is an existing node (else None): the term
    without its constant factor or negation."""
    op = term.op
    if op == "neg":
        inner = term.args[0]
        return None if inner.op == "mul" else inner
    if op == "mul" and term.args[0].op == "const":
        return term.args[1] if len(term.args) == 2 else None
    return term


def _rule_mul(args):
    if len(args) == 2:
        a, b = args
        if a.op != "mul" and b.op != "mul":
            if a.op != "const":
                if b.op != "const":
                    if a is b:  # x * x is x**2: one node, however it was written (tan's
                        return _made("pow", (a, const(2.0)))  # derivative 1 + tan(u)*tan(u))
                    return _op_node("mul", _in_order(a, b, _MUL_RANK))
                a, b = b, a
            elif b.op == "const":
                a = None
            if a is not None:  # c * t: the coefficient goes first
                c = a.value
                return b if c == 1.0 else _made("neg", (b,)) if c == -1.0 else (a, b)
    factors = _flatten("mul", args)
    numbers = [f.value for f in factors if f.op == "const"]
    factors = [f for f in factors if f.op != "const"]
    coefficient = 1.0
    if numbers:
        coefficient = _fold("mul", numbers) if len(numbers) > 1 else numbers[0]
    if not factors:
        return const(coefficient)
    if coefficient == -1.0:
        return apply("neg", factors[0] if len(factors) == 1 else apply("mul", *factors))
    if coefficient != 1.0:
        factors.append(const(coefficient))
    return factors[0] if len(factors) == 1 else tuple(sorted(factors, key=_MUL_KEY))


def _rule_neg(args):
    (x,) = args
    if x.op == "neg":
        return x.args[0]
    if x.op == "mul" and x.args[0].op == "const":
        return apply("mul", _fold("neg", [x.args[0].value]), *x.args[1:])
    return args


def _rule_div(args):
    a, b = args
    if b.op == "const" and b.value == 1.0:
        return a
    return args


def _rule_pow(args):
    base, exponent = args
    if exponent.op == "const" and exponent.value == 1.0:
        return base
    if exponent.op == "const" and exponent.value == 0.0:
        return const(1.0)  # NumPy: nan**0 == 1
    if base.op == "const" and base.value == 1.0:
        return const(1.0)  # NumPy: 1**nan == 1
    return args


def _rule_where(args):
    condition, a, b = args
    if condition.op == "const":
        return a if condition.value != 0.0 or math.isnan(condition.value) else b
    if a is b:
        return a
    if condition.op in COMPARISONS and a.op == b.op == "const" and (a.value, b.value) == (1, 0):
        return condition
    return args


def _rule_same_arguments(op: str):
    # min(a, a) = max(a, a) = a and a < a = a > a = 0 hold for every a, nan included.
    def rule(args):
        a, b = args
        if a is b:
            return a if op in ("min", "max") else const(0.0)
        return args

    return rule


_RULES = {"add": _rule_add, "mul": _rule_mul, "neg": _rule_neg, "div": _rule_div,
          "pow": _rule_pow, "where": _rule_where,
          **{op: _rule_same_arguments(op) for op in ("min", "max", "lt", "gt")}}


def apply(op: str, *args) -> Node:
    """The one constructor of operation nodes: ``apply("sin", x)``, ``apply("add", x, y, 1)``."""
    spec = OPS.get(op)
    if spec is None:
        raise ValueError(f"unknown operation {op!r}")
    nodes = args
    for a in args:
        if a.__class__ is not Node:
            nodes = tuple(_as_node(a) for a in args)
            break
    if spec.arity >= 0 and len(nodes) != spec.arity:
        raise TypeError(f"{op}() takes {spec.arity} argument(s), got {len(nodes)}")
    if spec.arity < 0 and not nodes:
        raise TypeError(f"{op}() takes at least one argument")
    return _made(op, nodes)


def _made(op: str, nodes: tuple) -> Node:
    """`apply` after its checks: `nodes` are Nodes, as many as `op` takes."""
    rule = _RULES.get(op)
    if rule is not None:
        result = rule(nodes)
        if result.__class__ is Node:
            return result
        nodes = result
    for n in nodes:
        if n.op != "const":
            return _op_node(op, nodes)
    try:
        return const(_fold(op, [n.value for n in nodes]))
    except NotImplementedError:  # a function without numerics (undefined f(2.0)): a node
        return _intern(op, nodes, None)


def _constants_fold(op: str, nodes: list[Node]) -> bool:
    # c1 * (c2 * t) is better as (c1*c2) * t: flattening copies nothing but the constant.
    return len(nodes) == 2 and any(n.op == "const" for n in nodes) and all(
        n.op != op or (len(n.args) == 2 and any(a.op == "const" for a in n.args)) for n in nodes)


def _coefficient(t: Node) -> Node | None:
    for x in t.args:  # (a loop: `next` over a generator cost ~5x as much, 17,000 calls a
        if x.op == "const":  # 50,000-node gradient)
            return x
    return None


def _cancels(op: str, c: Node, t: Node) -> bool:
    # c with t's own coefficient makes the identity (mul: or -1): t's other operands alone are
    # the result, as cheap as c * t and often a node already made (0.5 * (2*u*v): the u*v of
    # a square's derivative is the squared node itself).
    k = _coefficient(t)
    if k is None:
        return False
    joined = float(c.value) * float(k.value) if op == "mul" else float(c.value) + float(k.value)
    return joined in ((1.0, -1.0) if op == "mul" else (0.0,))


def combine(op: str, operands: Sequence) -> Node:
    """``add``/``mul`` over exactly `operands`, without flattening nested sums or products.

    `apply` flattens, which is canonical but copies a nested node's operands into the new one:
    when that nested node is shared (an adjoint reused by every argument of a node), flattening
    recomputes it at every use. The differentiator combines through here so that a shared
    adjoint stays one operand, and derivative programs stay within a small factor of f.
    """
    if len(operands) == 2:  # the differentiator's `adjoint * partial`: two nodes
        a, b = operands
        if a.__class__ is Node and b.__class__ is Node:
            if a.op != op and b.op != op:  # nothing nested: the ordinary rules
                if op == "mul":  # `_rule_mul`'s first cases, inlined
                    if a.op != "const":
                        if b.op != "const":
                            return _op_node(op, _in_order(a, b, _MUL_RANK))
                        a, b = b, a
                    elif b.op == "const":
                        return _made(op, (a, b))  # two constants: folded
                    c = a.value  # c * t: the coefficient goes first
                    return b if c == 1.0 else _made("neg", (b,)) if c == -1.0 else _op_node(
                        op, (a, b))
                return _made(op, (a, b))
            if a.op != "const" and b.op != "const":  # kept whole, in canonical order
                k = _coefficient(a) if op == "mul" and a.op == b.op == "mul" else None
                if k is not None and _cancels(op, k, b):
                    return apply(op, a, b)  # (-0.5*u) * (2*v) is -(u*v)
                return _op_node(op, _in_order(a, b, _ADD_RANK if op == "add" else _MUL_RANK))
            # a constant and a nested sum (product) t: the steps below for two operands
            c, t = (a, b) if a.op == "const" else (b, a)
            if len(t.args) == 2 and (t.args[0].op == "const" or t.args[1].op == "const"):
                return apply(op, a, b)  # `_constants_fold`: c1 * (c2 * u) is (c1*c2) * u
            if _cancels(op, c, t):  # 0.5 * (2*u*v) is u*v: no coefficient left to apply
                return apply(op, a, b)
            if c.value == (0.0 if op == "add" else 1.0):
                return t
            if op == "mul" and c.value == -1.0:
                return apply("neg", t)
            return _op_node(op, _in_order(a, b, _ADD_RANK if op == "add" else _MUL_RANK))
    nodes = [o if o.__class__ is Node else _as_node(o) for o in operands]
    for n in nodes:
        if n.op == op:
            break
    else:  # no nested sum (product): nothing worth keeping apart, the ordinary rules apply
        return apply(op, *nodes)
    if _constants_fold(op, nodes):
        return apply(op, *nodes)
    identity = 0.0 if op == "add" else 1.0
    nodes = [n for n in nodes if not (n.op == "const" and n.value == identity)]
    if op == "mul" and any(n.op == "const" and n.value == -1.0 for n in nodes):
        rest = [n for n in nodes if not (n.op == "const" and n.value == -1.0)]
        if len(rest) == len(nodes) - 1:
            return apply("neg", combine("mul", rest))
    if len(nodes) == 1:
        return nodes[0]
    return _intern(op, tuple(sorted(nodes, key=_ADD_KEY if op == "add" else _MUL_KEY)), None)
