"""Conversion between symgraph DAGs and SymPy expressions, both ways, without recursion.

`from_sympy` walks the SymPy tree with an explicit stack and converts each distinct SymPy
subexpression once (memo keyed by the SymPy object), so shared SymPy subtrees become shared
nodes and the work is linear in the size of the DAG, not of the expanded tree. `to_sympy` builds
SymPy objects in the DAG's topological order. Deep chains need no recursion in this module
(SymPy itself may still recurse while constructing some deep trees).

Decisions:

* Symbols map by name (their assumptions are dropped). Numbers become float64 constants: huge
  Integers become ``inf``, never big-int math. ``zoo`` (unsigned infinity) has no float, so it
  becomes ``nan``.
* ``x/y`` becomes ``div(x, y)``: factors ``b**-q`` of a product (``q`` rational) form one
  denominator, and an exact rational coefficient ``p/q`` puts ``q`` there too, so ``x/3`` is the
  correctly rounded ``div(x, 3)``. ``b**(1/2)`` is ``sqrt(b)``; ``sign(a)*Abs(a)**(1/3)`` (SymPy's
  real cube root, and our `to_sympy` of ``cbrt``) is ``cbrt(a)``; ``Max(0, a)`` is ``relu(a)``.
* Booleans are numbers 1.0 / 0.0, as comparisons are in symgraph: ``And`` is the product of its
  operands' truth values, ``Or`` their ``max``, ``Not`` is ``eq(c, 0)`` and ``ITE`` is a
  ``where``; an operand that is not a comparison is first made a truth value with
  ``ne(c, 0)`` (symgraph's `where` test).
* ``Piecewise`` becomes nested ``where`` (first condition outermost); without a ``True`` branch
  the remaining case is ``nan``. ``Heaviside(x, h0)`` is ``where(x > 0, 1, where(x == 0, h0,
  0))`` with SymPy's default ``h0 = 1/2`` (so ``Heaviside(nan)`` is 0, not nan).
* `to_sympy` makes ``Symbol(name, real=True)`` by default: symgraph values are real floats, and
  real symbols let SymPy simplify and differentiate as for reals (``diff(Abs(x), x)`` is
  ``sign(x)``, not an expression in ``re``/``im``). Pass ``symbols`` to choose other symbols.
* `to_sympy` always returns expressions (numbers): a comparison used as a number becomes
  ``Piecewise((1, rel), (0, True))``; only a `where` condition stays a relational. Constants
  that are integers or dyadic fractions (``0.5``, ``0.375``) become exact Integer/Rational, so
  ``x**0.5`` reads ``sqrt(x)``; other values become 53-bit Floats with the same value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction

import sympy as sp
from sympy.core.function import AppliedUndef

from ..ir.exact import Exact
from ..ir.node import Node, apply, const, symbol
from ..ir.ops import COMPARISONS, OPS, generation
from ..ir.traversal import bulk, topological_order
from .userfunctions import derivative_of, user_function

__all__ = ["from_sympy", "from_sympy_matrix", "to_sympy"]

_EXACT = 2**53  # integers below this are exact floats
_THIRD = sp.Rational(1, 3)

_CLASSES: list = [-1, {}]  # [table generation, {SymPy class: op name}]


def _op_of_class(cls: type) -> str | None:
    """The op whose `sympy_names` lists SymPy class `cls` (the table's reverse map)."""
    if _CLASSES[0] != generation():
        _CLASSES[:] = [generation(), {getattr(sp, name): op for op, spec in OPS.items()
                                      for name in spec.sympy_names}]
    return _CLASSES[1].get(cls)


_RECIPROCAL: dict[type, str] = {  # sec(x) = 1/cos(x), ...
    sp.sec: "cos", sp.csc: "sin", sp.cot: "tan", sp.sech: "cosh", sp.csch: "sinh",
    sp.coth: "tanh",
}
_SPECIAL: dict[object, float] = {
    sp.S.Infinity: math.inf, sp.S.NegativeInfinity: -math.inf, sp.S.NaN: math.nan,
    sp.S.ComplexInfinity: math.nan, sp.S.true: 1.0, sp.S.false: 0.0,
}

# A plan for one SymPy object: the SymPy children to convert first, and how to build the node
# from their nodes (in the same order).
Plan = tuple[Sequence[sp.Basic], Callable[[list[Node]], Node]]


# -- SymPy -> symgraph ------------------------------------------------------------------------


@bulk
def from_sympy(expr) -> Node:
    """The symgraph node for a scalar SymPy expression (or a number); see the module notes."""
    expr = _sympify(expr)
    if isinstance(expr, sp.MatrixBase):
        raise ValueError("from_sympy converts scalar expressions; use from_sympy_matrix")
    return _convert([expr])[0]


@bulk
def from_sympy_matrix(matrix) -> list[list[Node]]:
    """Nested lists of nodes for a SymPy Matrix (or nested lists); entries share subtrees."""
    rows = sp.Matrix(matrix)
    flat = _convert([_sympify(e) for e in rows])
    return [flat[i * rows.cols:(i + 1) * rows.cols] for i in range(rows.rows)]


def _sympify(expr) -> sp.Basic:
    if isinstance(expr, sp.Basic):
        return expr
    try:
        return sp.sympify(expr, strict=True)  # strict: never parse strings
    except sp.SympifyError:
        raise ValueError(f"cannot convert {type(expr).__name__} to symgraph") from None


def _convert(exprs: list[sp.Basic]) -> list[Node]:
    memo: dict[sp.Basic, Node] = {}
    plans: dict[sp.Basic, Plan] = {}
    for root in exprs:
        stack = [root]
        while stack:
            e = stack[-1]
            if e in memo:
                stack.pop()
                continue
            plan = plans.get(e)
            if plan is None:  # first visit: convert the children first
                plan = plans[e] = _plan(e)
                missing = [c for c in plan[0] if c not in memo]
                if missing:
                    stack.extend(reversed(missing))
                    continue
            stack.pop()
            children, build = plans.pop(e)
            memo[e] = build([memo[c] for c in children])
    return [memo[e] for e in exprs]


def _atom(e: sp.Basic) -> Node | None:
    """The node of a symbol or number, None for anything else."""
    if isinstance(e, sp.Symbol):
        return symbol(e.name)
    if e in _SPECIAL:
        return const(_SPECIAL[e])
    if isinstance(e, sp.Rational):
        return _rational(e.p, e.q)
    if isinstance(e, (sp.Float, sp.NumberSymbol)):
        return const(float(e))
    return None


def _plan(e: sp.Basic) -> Plan:
    """How to convert `e`: its children and a builder (no children for an atom)."""
    atom = _atom(e)
    if atom is not None:
        return (), lambda _: atom
    cls = type(e)
    if cls is sp.Add:
        return e.args, lambda ns: apply("add", *ns)
    if cls is sp.Mul:
        return _plan_mul(e)
    if cls is sp.Pow:
        return _plan_pow(e)
    if cls is sp.log:
        return e.args, _build_log
    if cls is sp.Max and len(e.args) == 2 and any(a is sp.S.Zero for a in e.args):
        other = e.args[1] if e.args[0] is sp.S.Zero else e.args[0]
        return (other,), lambda ns: apply("relu", ns[0])  # Max(0, a) is relu(a)
    if cls is sp.polygamma and e.args[0] == 0:  # SymPy writes digamma(x) as polygamma(0, x)
        return e.args[1:], lambda ns: apply("digamma", ns[0])
    op = _op_of_class(cls)
    if op is not None:
        return e.args, _builder(op, len(e.args))
    if cls is sp.erfcinv:  # to_sympy writes erfinv(1 - z) (SymPy cannot evaluate erfcinv)
        return e.args, lambda ns: apply("erfcinv", ns[0])
    if isinstance(e, AppliedUndef) and user_function(cls.__name__) is not None:
        return e.args, lambda ns, name=cls.__name__: apply(name, *ns)  # a declared function
    if cls is sp.Derivative and isinstance(e.expr, AppliedUndef):
        return _plan_derivative(e, {})
    if cls is sp.Subs and isinstance(e.expr, sp.Derivative) and isinstance(e.expr.expr,
                                                                           AppliedUndef):
        return _plan_derivative(e.expr, dict(zip(e.variables, e.point)))
    if cls in _RECIPROCAL:
        return e.args, lambda ns, op=_RECIPROCAL[cls]: apply("div", 1.0, apply(op, ns[0]))
    if cls is sp.Heaviside:
        return e.args, _build_heaviside
    if cls is sp.Piecewise:
        return _plan_piecewise(e)
    if cls in (sp.And, sp.Or, sp.Not, sp.ITE):
        return e.args, lambda ns, cls=cls: _build_logic(cls, ns)
    if isinstance(e, AppliedUndef):
        raise ValueError(f"cannot convert the undefined SymPy function {cls.__name__!r}: "
                         "declare it first (symgraph.undefined_function or define_function)")
    raise ValueError(f"cannot convert SymPy {cls.__name__} to symgraph")


def _plan_derivative(e: sp.Derivative, at: dict) -> Plan:
    """SymPy's Derivative(f(x, y), x, y) of an undefined f at distinct symbols: f_12(x, y);
    in a Subs (SymPy's form at other points), the points `at` replace the symbols."""
    applied, base = e.expr, type(e.expr).__name__
    args = list(applied.args)
    if not all(isinstance(a, sp.Symbol) for a in args) or len(set(args)) != len(args):
        raise ValueError(f"cannot convert SymPy's derivative of {base} at {applied.args}")
    indices = []
    for variable, count in e.variable_count:
        if variable not in args:
            raise ValueError(f"cannot convert SymPy's derivative of {base} in {variable}")
        indices += [args.index(variable) + 1] * int(count)
    if user_function(base) is None:
        raise ValueError(f"cannot convert the derivative of the undefined SymPy function "
                         f"{base!r}: declare it first, symgraph.undefined_function({base!r})")
    name = derivative_of(base, indices).name
    return [at.get(a, a) for a in args], lambda ns: apply(name, *ns)


def _rational(p: int, q: int) -> Node:
    if q != 1 and abs(p) < 2**53 and q < 2**53:
        return apply("div", const(p), const(q))  # 1/3 stays exact (ir/exact.py)
    try:
        return const(p / q)  # int / int is correctly rounded
    except OverflowError:
        return const(math.inf if p > 0 else -math.inf)


def _power(base: Node, q: sp.Rational) -> Node:
    """``base**q`` for a positive rational `q`, with the readable special cases."""
    if q == 1:
        return base
    if q == sp.S.Half:
        return apply("sqrt", base)
    return apply("pow", base, _rational(q.p, q.q))


def _plan_pow(e: sp.Pow) -> Plan:
    base, exponent = e.args
    if base is sp.S.Exp1:
        return (exponent,), lambda ns: apply("exp", ns[0])
    if isinstance(exponent, sp.Rational):
        if exponent.is_negative:
            return (base,), lambda ns: apply("div", 1.0, _power(ns[0], -exponent))
        return (base,), lambda ns: _power(ns[0], exponent)
    return (base, exponent), lambda ns: apply("pow", *ns)


def _plan_mul(e: sp.Mul) -> Plan:
    coefficient, factors = e.as_coeff_mul()
    numerator: list[Node] = []  # constants; child nodes are appended at build time
    denominator: list[Node] = []
    if isinstance(coefficient, sp.Rational) and coefficient.q != 1 and \
            abs(coefficient.p) < _EXACT and coefficient.q < _EXACT:
        numerator.append(const(coefficient.p))
        denominator.append(const(coefficient.q))
    elif coefficient != 1:
        numerator.append(_atom(coefficient))
    # SymPy's real cube root sign(a)*Abs(a)**(1/3) -> cbrt(a).
    signs = {f.args[0] for f in factors if type(f) is sp.sign}
    roots = {f.base.args[0] for f in factors if signs and type(f) is sp.Pow
             and type(f.base) is sp.Abs and f.exp == _THIRD and f.base.args[0] in signs}
    children: list[sp.Basic] = []
    kinds: list[tuple[str, object]] = []  # per child: ("num" | "cbrt" | "den", exponent)
    for f in factors:
        if type(f) is sp.sign and f.args[0] in roots:
            continue  # consumed by the cbrt pair
        if type(f) is sp.Pow and type(f.base) is sp.Abs and f.base.args[0] in roots \
                and f.exp == _THIRD:
            children.append(f.base.args[0])
            kinds.append(("cbrt", None))
        elif type(f) is sp.Pow and isinstance(f.exp, sp.Rational) and f.exp.is_negative:
            children.append(f.base)
            kinds.append(("den", -f.exp))
        else:
            children.append(f)
            kinds.append(("num", None))

    def build(nodes: list[Node]) -> Node:
        top, bottom = list(numerator), list(denominator)
        for node, (kind, q) in zip(nodes, kinds):
            if kind == "den":
                bottom.append(_power(node, q))
            else:
                top.append(apply("cbrt", node) if kind == "cbrt" else node)
        product = apply("mul", *top) if top else const(1.0)
        if not bottom:
            return product
        return apply("div", product, apply("mul", *bottom) if len(bottom) > 1 else bottom[0])

    return children, build


def _build_log(nodes: list[Node]) -> Node:
    if len(nodes) == 1:
        return apply("log", nodes[0])
    x, base = nodes  # unevaluated log(x, base)
    if base.is_const and base.value in (2.0, 10.0):
        return apply("log2" if base.value == 2.0 else "log10", x)
    return apply("div", apply("log", x), apply("log", base))


def _builder(op: str, n: int) -> Callable[[list[Node]], Node]:
    """Applies `op` to the converted arguments; an op that `folds` (min, max) takes SymPy's
    n-ary form pairwise, in SymPy's (canonical) order."""
    spec = OPS[op]
    if n == spec.arity or spec.arity < 0:
        return lambda nodes: apply(op, *nodes)
    if not (spec.folds and n > spec.arity):
        raise ValueError(f"cannot convert SymPy {spec.sympy_names[0]} of {n} arguments: "
                         f"{op} takes {spec.arity}")

    def build(nodes: list[Node]) -> Node:
        result = nodes[0]
        for node in nodes[1:]:
            result = apply(op, result, node)
        return result

    return build


def _build_heaviside(nodes: list[Node]) -> Node:
    x = nodes[0]
    at_zero = nodes[1] if len(nodes) > 1 else const(0.5)
    return apply("where", apply("gt", x, 0.0), 1.0,
                 apply("where", apply("eq", x, 0.0), at_zero, 0.0))


def _plan_piecewise(e: sp.Piecewise) -> Plan:
    pairs = [(p.expr, p.cond) for p in e.args]
    children: list[sp.Basic] = []
    for value, condition in pairs:
        children.append(value)
        if condition is not sp.S.true:
            children.append(condition)

    def build(nodes: list[Node]) -> Node:
        it = iter(nodes)
        branches = [(next(it), None if c is sp.S.true else next(it)) for _, c in pairs]
        result = const(math.nan)  # SymPy: undefined where no condition holds
        for value, condition in reversed(branches):
            result = value if condition is None else apply("where", condition, value, result)
        return result

    return children, build


def _truth(node: Node) -> Node:
    """A 1.0 / 0.0 truth value: comparisons already are; others follow `where` (nonzero)."""
    if node.op in COMPARISONS or (node.is_const and node.value in (0.0, 1.0)):
        return node
    return apply("ne", node, 0.0)


def _build_logic(cls: type, nodes: list[Node]) -> Node:
    truths = [_truth(n) for n in nodes]
    if cls is sp.Not:
        return apply("eq", truths[0], 0.0)
    if cls is sp.ITE:  # SymPy's boolean if-then-else (it rewrites some relations into it)
        return apply("where", *truths)
    if cls is sp.And:
        return apply("mul", *truths)
    result = truths[0]
    for t in truths[1:]:
        result = apply("max", result, t)
    return result


# -- symgraph -> SymPy ------------------------------------------------------------------------


def to_sympy(node_or_nodes: Node | Iterable[Node],
             symbols: Mapping[str, sp.Basic] | None = None) -> sp.Expr | list[sp.Expr]:
    """SymPy expression(s) for node(s); `symbols` maps names to the SymPy symbols to use.

    Unmapped names become ``Symbol(name, real=True)``. Returns one expression for one node, a
    list for an iterable of nodes.
    """
    single = isinstance(node_or_nodes, Node)
    roots = [node_or_nodes] if single else list(node_or_nodes)
    chosen = dict(symbols or {})
    built: dict[Node, sp.Basic] = {}  # comparisons map to relationals (or true/false)
    numeric: dict[Node, sp.Expr] = {}  # Piecewise forms of comparisons used as numbers

    def number(node: Node) -> sp.Expr:
        if node.op not in COMPARISONS:
            return built[node]
        if node not in numeric:
            relation = built[node]
            if relation is sp.S.true or relation is sp.S.false:
                numeric[node] = sp.S.One if relation is sp.S.true else sp.S.Zero
            else:
                numeric[node] = sp.Piecewise((1, relation), (0, True))
        return numeric[node]

    for node in topological_order(roots):
        op = node.op
        if op == "const":
            built[node] = _sympy_number(node.value)
        elif op == "symbol":
            built[node] = chosen[node.name] if node.name in chosen else \
                sp.Symbol(node.name, real=True)
        elif op in COMPARISONS:
            built[node] = _relation(op, number(node.args[0]), number(node.args[1]))
        elif op == "where":
            built[node] = _where(node, built, number)
        else:
            built[node] = OPS[op].sympy(sp, *[number(a) for a in node.args])
    results = [number(r) for r in roots]
    return results[0] if single else results


def _relation(op: str, a: sp.Basic, b: sp.Basic) -> sp.Basic:
    if a is sp.S.NaN or b is sp.S.NaN:  # IEEE: only != holds; SymPy refuses to compare nan
        return sp.S.true if op == "ne" else sp.S.false
    return OPS[op].sympy(sp, a, b)


def _where(node: Node, built: dict, number: Callable[[Node], sp.Expr]) -> sp.Basic:
    condition_node, a, b = node.args
    if condition_node.op in COMPARISONS:
        condition = built[condition_node]  # a relational, or true/false when SymPy decided it
    else:
        condition = sp.Ne(built[condition_node], 0)  # symgraph: any nonzero (or nan) is true
    return OPS["where"].sympy(sp, condition, number(a), number(b))


def _sympy_number(value: float) -> sp.Expr:
    if value.__class__ is Exact:  # 1/3, sqrt(2*pi): SymPy's exact numbers
        coefficient, atoms = value.form
        number = sp.Rational(coefficient.numerator, coefficient.denominator)
        for atom, exponent in atoms:
            base = sp.pi if atom == "pi" else sp.E if atom == "E" else sp.Integer(atom)
            number *= base ** sp.Rational(exponent.numerator, exponent.denominator)
        return number
    if math.isnan(value):
        return sp.S.NaN
    if math.isinf(value):
        return sp.S.Infinity if value > 0 else sp.S.NegativeInfinity
    if abs(value) < _EXACT:  # beyond, exact integers would print as 300-digit numbers
        fraction = Fraction(value)
        if fraction.denominator <= 1024:  # integer or short dyadic: exact, reads well
            return sp.Rational(fraction.numerator, fraction.denominator)
    return sp.Float(value)  # 53-bit, the same value
