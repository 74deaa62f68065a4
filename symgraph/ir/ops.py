"""The op table: every operation symgraph knows, defined once.

Each `OpSpec` says everything the pipeline needs about one operation:

* ``arity``      number of arguments (``-1`` for n-ary ``add`` / ``mul``)
* ``evaluate``   its numeric meaning on NumPy values (constant folding, reference evaluation)
* ``partials``   local derivatives ``(args, out) -> tuple`` built as graph nodes, ``None`` for zero
* ``py``, ``np``, ``nb``  code templates: scalar Python (``math``), NumPy arrays, Numba scalar
* ``lanes``      Numba template of lane batch kernels, where exp/log/... are symgraph.vecmath's
  vectorisable ``vexp``/``vlog``/... (within an ulp of libm); ``None``: the ``nb`` template
* ``latex``      LaTeX template, and ``infix``/``precedence`` for the infix operators
* ``sympy``      how to rebuild the op from SymPy functions (for ``to_sympy``)
* ``domain``     the interval per argument that tests sample from
* ``cost``       arithmetic operations one evaluation is worth (transcendental functions ~8)
* traits the stages ask instead of listing names: ``title`` (pictures), ``comparison`` (a 0/1
  mask: derivative 0, a relation in text and SymPy), ``smooth``, ``vectorises`` (lane loops
  take the ``nb`` template as is), ``integer_powers`` (`small_power`), ``folds`` (n-ary calls
  fold pairwise), ``spellings`` (the parser's call names), ``sympy_names`` (SymPy classes that
  `from_sympy` maps back), ``method`` (``t.exp()`` on graph tensors). `opspec.OpSpec` has the
  defaults; `register` adds an op (docs/developing.md, "How to add an op").

Templates are ``str.format`` strings over operand code, or callables ``(operands) -> str``.
Operands handed to templates are always plain names or literals, so repeating ``{0}`` is safe.

Conventions at non-differentiable points: ``abs'(0) = 0``, ``relu'(0) = 0``,
``sign' = floor' = ceil' = 0``, ``hypot`` has gradient 0 at the origin, and on a tie ``max`` and
``min`` pass the whole derivative to their first argument (as TensorFlow does; it keeps their
reverse sweep at three operations). Comparisons and ``where`` conditions have derivative 0.
Mask partials (comparisons, ``where(c, 1, 0)``) guard the derivative below them instead of
multiplying it (ad/guards.py), so an untaken branch's inf or nan never reaches a result.

Partial rules use only `Node` methods (operators, ``.call``), so this module imports only
`opspec`: with it, the root of the pipeline.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from . import special as _sf
from .cuberoot import cbrt_array
from .cuberoot import source as cuberoot_source
from .exact import make
from .opspec import (  # noqa: F401  (re-exported: `ops` is where stages look ops up)
    ALIASES,
    CALLS,
    COMPARISONS,
    CONSTANTS,
    DEFAULT_DOMAIN,
    INFIX,
    OPS,
    PREC_ADD,
    PREC_ATOM,
    PREC_COMPARE,
    PREC_MUL,
    PREC_NEG,
    PREC_POW,
    SMALL_POWER_LIMIT,
    OpSpec,
    generation,
    having,
    is_builtin,
    register,
    seal_builtins,
    small_power,
    table_digest,
    unregister,
)
from .powers import NORMAL_TEST, pow_prev, pow_prev_partials, pow_prev_sympy

# 2/sqrt(pi), exact (it prints so, and folds exactly with other constants); its value is the
# correctly rounded float64.
SQRT_PI_2 = make((Fraction(2), (("pi", Fraction(-1, 2)),)))


def _op(name, arity, evaluate, partials, py, np_, nb=None, latex=None, sympy=None,
        domain=None, **extra) -> None:
    OPS[name] = OpSpec(name=name, arity=arity, evaluate=evaluate, partials=partials, py=py,
                       np=np_, nb=nb, latex=latex, sympy=sympy, domain=domain or (), **extra)


TRANSCENDENTAL = 8  # a libm call costs roughly this many multiplications


def _func(name, evaluate, partial, py=None, np_=None, nb=None, latex=None, sympy=None,
          domain=None, cost=TRANSCENDENTAL, **extra):
    """A one-argument function; `partial(x, out)` is its derivative as a node."""
    _op(name, 1, evaluate, lambda a, out: (partial(a[0], out),),
        py or f"math.{name}({{0}})", np_ or f"np.{name}({{0}})", nb, latex or
        "\\" + name + r"\left({0}\right)", sympy, domain and (domain,), cost=cost, **extra)


# ---------------------------------------------------------------------------------------------
# Arithmetic


def _join(sep: str) -> Callable[[list[str]], str]:
    return lambda ops: sep.join(ops)


def _sum(ops: list[str]) -> str:
    # Negative literals read as subtraction: `x - 2.0`, not `x + -2.0`.
    code = ops[0]
    for operand in ops[1:]:
        code += f" - {operand[1:]}" if operand.startswith("-") else f" + {operand}"
    return code


def _mul_partials(args, out):
    # The product of the other factors: direct for two or three, else by prefix and suffix
    # products, so wide products stay linear; no product is built that no partial uses.
    n = len(args)
    if n <= 2:
        return (args[1], args[0]) if n == 2 else (1.0,)
    if n == 3:
        a, b, c = args
        return (b.times(c), a.times(c), a.times(b))
    prefix = [args[0]]
    for i in range(1, n - 1):
        prefix.append(prefix[-1].times(args[i]))
    result = [None] * n
    result[n - 1] = prefix[n - 2]
    suffix = args[n - 1]
    for i in range(n - 2, 0, -1):
        result[i] = prefix[i - 1].times(suffix)
        suffix = args[i].times(suffix)
    result[0] = suffix
    return tuple(result)


def _pow_template(general: str) -> Callable[[list[str]], str]:
    """Small integer powers become multiplications: exact, and far cheaper than pow()."""

    def render(ops: list[str]) -> str:
        base, k = ops[0], small_power(ops[1])
        if k is None:
            # A negative literal base needs parentheses: `-2.0 ** y` is -(2.0 ** y).
            return general.format(f"({base})" if base.startswith("-") else base, ops[1])
        product = " * ".join([base] * abs(k))
        return product if k > 0 else f"1.0 / ({product})" if abs(k) > 1 else f"1.0 / {base}"

    return render


def _pow_partials(args, out):
    base, exponent = args
    if exponent.is_const:
        return (exponent * base ** (exponent - 1.0), None)  # exact: x**(1/3) -> x**(-2/3)
    # d/dy x**y = x**y * log(x): at x = 0 that is 0 * -inf; the limit (x**y -> 0 for y > 0) is
    # 0, as PyTorch and JAX give. log(x) is selected away there (a select, not a product: its
    # -inf never reaches the sum), so the rule's log(x) is the one the expression may hold
    # already (weibull's log(d/lam)): one log, not a second one of a guarded copy of x. Its
    # derivatives meet 1/x only under the guard x != 0 (symgraph.ad.guards).
    # x**(y-1) is `pow_prev` of x**y (the output: one pow, not two, where it is normal).
    return (exponent * base.call("pow_prev", exponent, out),
            out * base.call("eq", 0.0).call("where", 0.0, base.call("log")))


_op("add", -1, lambda *a: sum(a[1:], a[0]), lambda a, out: (1.0,) * len(a),
    _sum, _sum, latex="{0} + {1}", sympy=lambda sp, *a: sp.Add(*a),
    infix="+", precedence=PREC_ADD, commutative=True, title="Add", vectorises=True, finite=True)
_op("mul", -1, lambda *a: math.prod(a[1:], start=a[0]), _mul_partials,
    _join(" * "), _join(" * "), latex=r"{0} \cdot {1}", sympy=lambda sp, *a: sp.Mul(*a),
    infix="*", precedence=PREC_MUL, commutative=True, title="Multiply", vectorises=True,
    finite=True)
_op("neg", 1, np.negative, lambda a, out: (-1.0,), "-{0}", "-{0}", latex="-{0}",
    sympy=lambda sp, a: -a, infix="-", precedence=PREC_NEG, title="Negate", vectorises=True,
    finite=True)
_op("div", 2, np.divide, lambda a, out: (1.0 / a[1], -out / a[1]), "{0} / {1}", "{0} / {1}",
    latex=r"\frac{{{0}}}{{{1}}}", sympy=lambda sp, a, b: a / b, infix="/", precedence=PREC_MUL,
    domain=(DEFAULT_DOMAIN, (0.5, 3.0)), title="Divide", vectorises=True)
_op("pow", 2, np.power, _pow_partials, _pow_template("math.pow({0}, {1})"),
    _pow_template("np.power({0}, {1})"), _pow_template("{0} ** {1}"),
    lanes=_pow_template("vpow({0}, {1})"), latex="{{{0}}}^{{{1}}}",
    cost=TRANSCENDENTAL,  # small integer powers are multiplications: see schedule's cost
    np_ns=3.0,  # np.power of another exponent, ns an element (small integer ones: products)
    sympy=lambda sp, a, b: a**b, infix="**", precedence=PREC_POW,
    domain=((0.2, 3.0), (-2.0, 2.0)), title="Power", integer_powers=True,
    spellings=("pow",))  # pow(x, y) is read too

# ---------------------------------------------------------------------------------------------
# Comparisons: numbers 1.0 / 0.0, derivative zero.

# NumPy's select (np.where, which the comparisons' and where's NumPy forms call): 1.2 ns an
# element, a comparison into it 1.5, where an add takes 0.2 (2,048-element blocks, as
# runtime.interpret runs batches, beyond the call; Zen 4, NumPy 2.4, 2026-12-07).
_NP_WHERE_NS, _NP_COMPARE_NS = 1.3, 1.5

for _name, _sym, _ufunc, _latex, _rel, _title in [
    ("lt", "<", np.less, "<", "Lt", "Less"),
    ("le", "<=", np.less_equal, r"\le", "Le", "LessEqual"),
    ("gt", ">", np.greater, ">", "Gt", "Greater"),
    ("ge", ">=", np.greater_equal, r"\ge", "Ge", "GreaterEqual"),
    ("eq", "==", np.equal, "=", "Eq", "Equal"),
    ("ne", "!=", np.not_equal, r"\ne", "Ne", "NotEqual"),
]:
    _op(_name, 2, lambda a, b, _u=_ufunc: _u(a, b).astype(float) * 1.0,
        lambda a, out: (None, None),
        f"(1.0 if {{0}} {_sym} {{1}} else 0.0)", f"np.where({{0}} {_sym} {{1}}, 1.0, 0.0)",
        latex=f"{{0}} {_latex} {{1}}", sympy_names=(_rel,), infix=_sym, precedence=PREC_COMPARE,
        title=_title, comparison=True, smooth=False, vectorises=True, finite=True,
        np_ns=_NP_COMPARE_NS)


def _where_sympy(sp, c, a, b):
    decided = isinstance(c, sp.logic.boolalg.BooleanAtom)  # SymPy already settled it
    condition = c if decided or isinstance(c, sp.core.relational.Relational) else sp.Ne(c, 0)
    return sp.Piecewise((a, condition), (b, True))


_op("where", 3, lambda c, a, b: np.where(c != 0, a, b),
    lambda a, out: (None, a[0].call("where", 1.0, 0.0), a[0].call("where", 0.0, 1.0)),
    "({1} if {0} != 0.0 else {2})", "np.where({0} != 0.0, {1}, {2})",
    latex=r"\begin{{cases}} {1} & {0} \\ {2} & \text{{otherwise}} \end{{cases}}",
    sympy=_where_sympy, title="Where", smooth=False, vectorises=True, finite=True,
    np_ns=_NP_WHERE_NS)

# ---------------------------------------------------------------------------------------------
# Elementary functions. Derivatives reuse the output where it is natural (exp' = exp).

_func("sqrt", np.sqrt, lambda x, out: 0.5 / out, cost=4, latex=r"\sqrt{{{0}}}", domain=(0.1, 4.0),
      vectorises=True, method=True)
# cbrt: libm's, NumPy's and Numba's differ (none is correctly rounded everywhere); every backend
# computes symgraph's correctly rounded one (ir/cuberoot.py, written into Python modules; its
# whole-array form for NumPy batches; vecmath's vcbrt, the same bits, in lanes).
_func("cbrt", cbrt_array, lambda x, out: 1.0 / (3.0 * out * out), py="_cbrt({0})",
      np_="_cbrt_np({0})", nb="vcbrt({0})", lanes="vcbrt({0})", latex=r"\sqrt[3]{{{0}}}",
      np_prelude=(cuberoot_source("_cbrt"), cuberoot_source("_cbrt_np", cbrt_array)),
      sympy=lambda sp, x: sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3), domain=(0.1, 4.0),
      np_ns=40.0)  # ns an element: 28 in a loop of its own, 40 in cbrt_density@20's first batch
_func("exp", np.exp, lambda x, out: out, latex=r"e^{{{0}}}", lanes="vexp({0})",
      sympy_names=("exp",), method=True)
_func("expm1", np.expm1, lambda x, out: out + 1.0, latex=r"\left(e^{{{0}}} - 1\right)",
      sympy=lambda sp, x: sp.exp(x) - 1, lanes="vexpm1({0})")
_func("log", np.log, lambda x, out: 1.0 / x, domain=(0.1, 4.0), lanes="vlog({0})",
      sympy_names=("log",), spellings=("log", "ln"), method=True)
_func("log1p", np.log1p, lambda x, out: 1.0 / (1.0 + x), latex=r"\log\left(1 + {0}\right)",
      sympy=lambda sp, x: sp.log(1 + x), domain=(-0.5, 3.0), lanes="vlog1p({0})")
_func("log2", np.log2, lambda x, out: 1.0 / (x * math.log(2.0)), latex=r"\log_2\left({0}\right)",
      sympy=lambda sp, x: sp.log(x, 2), domain=(0.1, 4.0), lanes="vlog2({0})")
_func("log10", np.log10, lambda x, out: 1.0 / (x * math.log(10.0)),
      latex=r"\log_{{10}}\left({0}\right)", sympy=lambda sp, x: sp.log(x, 10), domain=(0.1, 4.0),
      lanes="vlog10({0})")
# NumPy's float64 sin and cos take 9-12 ns an element in a loop of their own (exp and log
# ~0.8), 14-17 in the interpreted first batches of trig_series@17, pendulum_chain@7 and
# product_chain@33 (same blocks and machine as the select's above): weighed by the latter.
_func("sin", np.sin, lambda x, out: x.call("cos"), lanes="vsin({0})", sympy_names=("sin",),
      method=True, finite=True, np_ns=15.0)
_func("cos", np.cos, lambda x, out: -x.call("sin"), lanes="vcos({0})", sympy_names=("cos",),
      method=True, finite=True, np_ns=15.0)
_func("tan", np.tan, lambda x, out: 1.0 + out * out, domain=(-1.2, 1.2), sympy_names=("tan",),
      lanes="vtan({0})")


def _arc(name, evaluate, partial, **extra):
    """An inverse function: NumPy calls it ``arcsin``, and the parser reads that too."""
    _func(name, evaluate, partial, np_=f"np.arc{name[1:]}({{0}})", sympy_names=(name,),
          spellings=(name, f"arc{name[1:]}"), **extra)


_arc("asin", np.arcsin, lambda x, out: 1.0 / (1.0 - x * x).call("sqrt"),
     latex=r"\arcsin\left({0}\right)", domain=(-0.9, 0.9))
_arc("acos", np.arccos, lambda x, out: -1.0 / (1.0 - x * x).call("sqrt"),
     latex=r"\arccos\left({0}\right)", domain=(-0.9, 0.9))
_arc("atan", np.arctan, lambda x, out: 1.0 / (1.0 + x * x), latex=r"\arctan\left({0}\right)",
     lanes="vatan({0})", finite=True)
_func("sinh", np.sinh, lambda x, out: x.call("cosh"), lanes="vsinh({0})", sympy_names=("sinh",))
_func("cosh", np.cosh, lambda x, out: x.call("sinh"), lanes="vcosh({0})", sympy_names=("cosh",))
_func("tanh", np.tanh, lambda x, out: 1.0 - out * out, lanes="vtanh({0})", sympy_names=("tanh",),
      method=True, finite=True)
_arc("asinh", np.arcsinh, lambda x, out: 1.0 / (x * x + 1.0).call("sqrt"),
     latex=r"\operatorname{{asinh}}\left({0}\right)", lanes="vasinh({0})", finite=True)
_arc("acosh", np.arccosh, lambda x, out: 1.0 / ((x - 1.0).call("sqrt") * (x + 1.0).call("sqrt")),
     latex=r"\operatorname{{acosh}}\left({0}\right)", domain=(1.1, 4.0))
_arc("atanh", np.arctanh, lambda x, out: 1.0 / (1.0 - x * x),
     latex=r"\operatorname{{atanh}}\left({0}\right)", domain=(-0.9, 0.9), lanes="vatanh({0})")
_func("erf", np.vectorize(math.erf, otypes=[float]),
      lambda x, out: SQRT_PI_2 * (-(x * x)).call("exp"), np_="_erf({0})",
      latex=r"\operatorname{{erf}}\left({0}\right)", lanes="verf({0})", sympy_names=("erf",),
      finite=True, np_ns=75.0,
      np_prelude=("_erf = np.vectorize(math.erf, otypes=[float])",))
_func("erfc", np.vectorize(math.erfc, otypes=[float]),
      lambda x, out: -SQRT_PI_2 * (-(x * x)).call("exp"), np_="_erfc({0})",
      latex=r"\operatorname{{erfc}}\left({0}\right)", sympy_names=("erfc",), finite=True,
      np_ns=70.0, np_prelude=("_erfc = np.vectorize(math.erfc, otypes=[float])",))

# Piecewise functions: derivative conventions in the module docstring.
_func("abs", np.abs, lambda x, out: x.call("sign"), py="abs({0})", np_="np.abs({0})", cost=1,
      latex=r"\left|{0}\right|", sympy_names=("Abs",), spellings=("abs", "Abs", "absolute"),
      smooth=False, vectorises=True, method=True, finite=True)
_func("sign", np.sign, lambda x, out: None, cost=1,
      py="(1.0 if {0} > 0.0 else (-1.0 if {0} < 0.0 else {0} + 0.0))", # + 0.0: sign(-0.0) = 0.0
      np_="np.sign({0})",
      latex=r"\operatorname{{sign}}\left({0}\right)", sympy_names=("sign",), smooth=False,
      vectorises=True, finite=True)
# math.floor and math.ceil return ints: copysign keeps NumPy's -0.0 (floor(-0.0), ceil(-0.5)).
_func("floor", np.floor, lambda x, out: None, cost=1,
      py="math.copysign(float(math.floor({0})), {0})",
      nb="np.floor({0})", np_="np.floor({0})", latex=r"\left\lfloor {0} \right\rfloor",
      sympy_names=("floor",), smooth=False, vectorises=True, finite=True)
_func("ceil", np.ceil, lambda x, out: None, cost=1, py="math.copysign(float(math.ceil({0})), {0})",
      nb="np.ceil({0})",
      np_="np.ceil({0})", latex=r"\left\lceil {0} \right\rceil", sympy_names=("ceiling",),
      spellings=("ceil", "ceiling"), smooth=False, vectorises=True, finite=True)
_func("relu", lambda x: np.maximum(x, 0.0), lambda x, out: x.call("gt", 0.0), cost=1,
      py="({0} if {0} > 0.0 or {0} != {0} else 0.0)", np_="np.maximum({0}, 0.0)",
      latex=r"\operatorname{{relu}}\left({0}\right)", sympy=lambda sp, x: sp.Max(0, x),
      smooth=False, vectorises=True, method=True, finite=True)
_func("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), lambda x, out: out * (1.0 - out),
      # exp(-|x|): no overflow; in Numba rows LLVM merges its two calls (and softplus's)
      py="(max(math.exp(-abs({0})), 1.0 if {0} >= 0.0 else 0.0) / (1.0 + math.exp(-abs({0}))))",
      np_="1.0 / (1.0 + np.exp(-{0}))",
      lanes="vsigmoid({0})",
      latex=r"\sigma\left({0}\right)", sympy=lambda sp, x: 1 / (1 + sp.exp(-x)),
      spellings=("sigmoid", "expit"), method=True, finite=True)
_func("softplus", lambda x: np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x))),
      lambda x, out: x.call("sigmoid"),
      py="(({0} if {0} > 0.0 else 0.0) + math.log1p(math.exp(-abs({0}))))",
      np_="(np.maximum({0}, 0.0) + np.log1p(np.exp(-np.abs({0}))))",
      lanes="(({0} if {0} > 0.0 else 0.0) + vlog1p(vexp(-abs({0}))))",
      latex=r"\operatorname{{softplus}}\left({0}\right)", sympy=lambda sp, x: sp.log(1 + sp.exp(x)),
      finite=True)


def _minmax_partials(first_wins: str):
    def partials(a, out):
        wins = a[0].call(first_wins, a[1])  # 1.0 where the first argument is the result
        return (wins, wins.call("where", 0.0, 1.0))

    return partials


_op("min", 2, np.minimum, _minmax_partials("le"),
    "({0} if {0} <= {1} or {0} != {0} else {1})", "np.minimum({0}, {1})",
    latex=r"\min\left({0}, {1}\right)", sympy_names=("Min",), folds=True, smooth=False,
    spellings=("min", "Min", "minimum"), vectorises=True, finite=True)
_op("max", 2, np.maximum, _minmax_partials("ge"),
    "({0} if {0} >= {1} or {0} != {0} else {1})", "np.maximum({0}, {1})",
    latex=r"\max\left({0}, {1}\right)", sympy_names=("Max",), folds=True, smooth=False,
    spellings=("max", "Max", "maximum"), vectorises=True, finite=True)
_op("atan2", 2, np.arctan2,
    lambda a, out: (a[1] / (a[0] * a[0] + a[1] * a[1]), -a[0] / (a[0] * a[0] + a[1] * a[1])),
    "math.atan2({0}, {1})", "np.arctan2({0}, {1})", cost=TRANSCENDENTAL, lanes="vatan2({0}, {1})",
    latex=r"\operatorname{{atan2}}\left({0}, {1}\right)", domain=((0.5, 3.0), (0.5, 3.0)),
    sympy_names=("atan2",), spellings=("atan2", "arctan2"))
_HYPOT_PRELUDE = '''def _hypot(a, b):
    """np.hypot (libm's, as Numba's) of two floats, without NumPy's overflow warning."""
    if abs(a) < 1e300 and abs(b) < 1e300:  # the result cannot overflow
        return float(np.hypot(a, b))
    with np.errstate(all="ignore"):
        return float(np.hypot(a, b))'''


def _hypot_partials(a, out):
    # v / hypot, with the origin's 0/0 replaced by 0/1: gradient 0 there (the convention).
    safe = out.call("gt", 0.0).call("where", out, 1.0)
    return tuple(v / safe for v in a)


_op("hypot", 2, np.hypot, _hypot_partials,
    # Python's math.hypot is its own algorithm, not libm's (NumPy's and Numba's): one point
    # uses NumPy's too, so rows, batches and backends agree bit for bit.
    "_hypot({0}, {1})", "np.hypot({0}, {1})", nb="math.hypot({0}, {1})", lanes="vhypot({0}, {1})",
    np_prelude=(_HYPOT_PRELUDE,), cost=TRANSCENDENTAL,
    latex=r"\sqrt{{{0}^2 + {1}^2}}", sympy=lambda sp, a, b: sp.sqrt(a**2 + b**2),
    smooth=False, finite=True)  # a kink at the origin

# ---------------------------------------------------------------------------------------------
# Special functions (symgraph.ir.special: plain Python on floats, SciPy's values at poles and
# edges; symgraph.backends.numba.special compiles the same functions for Numba kernels and the
# tape). Derivatives go through each other, so every order exists.

SQRT_PI_HALF = math.sqrt(math.pi) / 2.0
CONSTANT: list = []  # [node.const]: set by `node`, which imports this module (not vice versa)


def apply_polygamma(n: float, x):
    """polygamma(n, x) for a literal order n (a rule's node for a constant needs `node`)."""
    return CONSTANT[0](n).call("polygamma", x)


def _special(name, arity, partials, latex, domain, sympy_names=(), **extra):
    fn = f"_sf_{name}({', '.join(f'{{{i}}}' for i in range(arity))})"
    _op(name, arity, getattr(_sf, name + "_np"), partials, fn,
        extra.pop("np_", None) or fn.replace("(", "_np(", 1),
        latex=latex, domain=domain, sympy_names=sympy_names, cost=extra.pop("cost", 16),
        np_prelude=(f"from symgraph.ir.special import {name} as _sf_{name}, {name}_np as "
                    f"_sf_{name}_np",),
        nb_prelude=(f"from symgraph.backends.numba.special import _sf_{name}",), **extra)


def _order_shift(name):
    """besselj/bessely(n, x): d/dx = (f(n - 1, x) - f(n + 1, x)) / 2; n is an integer."""
    return lambda a, out: (None, 0.5 * ((a[0] - 1.0).call(name, a[1])
                                        - (a[0] + 1.0).call(name, a[1])))


def _beta_partials(a, out):
    common = (a[0] + a[1]).call("digamma")
    return (out * (a[0].call("digamma") - common), out * (a[1].call("digamma") - common))


def _lbeta_partials(a, out):
    common = (a[0] + a[1]).call("digamma")
    return (a[0].call("digamma") - common, a[1].call("digamma") - common)


_special("gamma", 1, lambda a, out: (out * a[0].call("digamma"),), r"\Gamma\left({0}\right)",
         ((0.2, 4.0),), sympy_names=("gamma",), np_ns=28_000.0)
_special("lgamma", 1, lambda a, out: (a[0].call("digamma"),),
         r"\ln\Gamma\left({0}\right)", ((0.2, 6.0),), sympy_names=("loggamma",),
         spellings=("lgamma", "loggamma", "gammaln"), np_ns=25_000.0, lanes="vlgamma({0})")
_special("digamma", 1, lambda a, out: (apply_polygamma(1.0, a[0]),), r"\psi\left({0}\right)",
         ((0.2, 6.0),), sympy_names=("digamma",), spellings=("digamma", "psi"), np_ns=4_000.0,
         lanes="vdigamma({0})")
_special("polygamma", 2, lambda a, out: (None, (a[0] + 1.0).call("polygamma", a[1])),
         r"\psi^{{({0})}}\left({1}\right)", ((0.0, 3.0), (0.2, 6.0)),
         sympy_names=("polygamma",), integer_arguments=(0,), np_ns=220_000.0)
_special("beta", 2, _beta_partials, r"\mathrm{{B}}\left({0}, {1}\right)",
         ((0.2, 4.0), (0.2, 4.0)), sympy_names=("beta",), np_ns=140_000.0)
_special("lbeta", 2, _lbeta_partials, r"\ln\mathrm{{B}}\left({0}, {1}\right)",
         ((0.2, 4.0), (0.2, 4.0)), spellings=("lbeta", "betaln"),
         sympy=lambda sp, a, b: sp.loggamma(a) + sp.loggamma(b) - sp.loggamma(a + b),
         np_ns=140_000.0)
_special("erfinv", 1, lambda a, out: (SQRT_PI_HALF * (out * out).call("exp"),),
         r"\operatorname{{erf}}^{{-1}}\left({0}\right)", ((-0.9, 0.9),), sympy_names=("erfinv",),
         np_ns=6_300.0)
_special("erfcinv", 1, lambda a, out: (-SQRT_PI_HALF * (out * out).call("exp"),),
         r"\operatorname{{erfc}}^{{-1}}\left({0}\right)", ((0.1, 1.9),),
         sympy=lambda sp, z: sp.erfinv(1 - z), np_ns=6_100.0)  # SymPy cannot evaluate its erfcinv
_special("besselj", 2, _order_shift("besselj"), r"J_{{{0}}}\left({1}\right)",
         ((0.0, 3.0), (-3.0, 3.0)), sympy_names=("besselj",), integer_arguments=(0,),
         spellings=("besselj", "jv"), cost=32, np_ns=270_000.0)
_special("bessely", 2, _order_shift("bessely"), r"Y_{{{0}}}\left({1}\right)",
         ((0.0, 3.0), (0.2, 6.0)), sympy_names=("bessely",), integer_arguments=(0,),
         spellings=("bessely", "yv"), cost=32, np_ns=440_000.0)
_special("xlogy", 2, lambda a, out: (a[1].call("log"), a[0] / a[1]),
         r"{0} \log\left({1}\right)", (DEFAULT_DOMAIN, (0.1, 4.0)),
         sympy=lambda sp, x, y: x * sp.log(y), cost=TRANSCENDENTAL, lanes="vxlogy({0}, {1})",
         # NumPy's own ufuncs, not np.vectorize (~650 ns an element on a Zen 3: a KL divergence's
         # interpreted first batch took 0.3 s): 3.3 ns an element in 2,048-row blocks (Zen 4)
         np_="np.where(({0} == 0.0) & ({1} == {1}), 0.0, {0} * np.log({1}))", np_ns=3.3)


# ---------------------------------------------------------------------------------------------
# pow_prev(x, y, p): x**(y - 1) from p = x**y, which d/dx x**y needs (ir/powers.py says how and
# why). After the table's other entries: the tape's instruction codes stay as they were.
_op("pow_prev", 3, pow_prev, pow_prev_partials,
    f"({{2}} / {{0}} if {NORMAL_TEST} else math.pow({{0}}, {{1}} - 1.0))",
    "np.where((np.abs({2}) >= 2.2250738585072014e-308) & (np.abs({2}) <= "
    "1.7976931348623157e308), {2} / {0}, np.power({0}, {1} - 1.0))",
    lanes="vpowprev({0}, {1}, {2})",  # p / x; flagged points (vpowprevoff) run the row steps
    latex=r"\left.{0}^{{{1} - 1}}\right|_{{{2}}}", sympy=pow_prev_sympy,
    domain=((0.2, 3.0), (-2.0, 2.0), (0.2, 3.0)), cost=4, title="PowerBelow")


seal_builtins()
