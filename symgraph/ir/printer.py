"""Printing nodes: Python/SymPy infix text (`to_text`), a shared form (`to_text_cse`), LaTeX.

Printing never recurses. Each node's form is a short list of *parts*: literal strings and
references to argument nodes (with the parentheses already decided from precedences). A loop
with an explicit stack then writes the tree out, so 100,000-deep chains print in linear time.

`parse(to_text(n)) is n` for every node `graph.apply` builds, as long as its symbol names are
identifiers that are neither Python keywords nor `ops.CONSTANTS` names (``e``, ``pi``, ...); such
names print as they are and cannot be read back. NaN prints as ``nan`` whatever its sign bit:
the graph interns all NaNs as one constant.

A DAG that shares subexpressions can print as a tree exponentially larger than itself, so
`to_text` measures the text first and refuses (ValueError) past `max_length`; `to_text_cse`
prints the shared form, one line per reused subexpression.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence

from .exact import Exact, exact_text
from .node import Node
from .ops import COMPARISONS, OPS, PREC_ADD, PREC_ATOM, PREC_COMPARE, PREC_MUL, PREC_NEG, PREC_POW
from .tidy import tidy_many
from .traversal import bulk, topological_order

__all__ = ["to_text", "to_text_cse", "to_latex", "number_text", "MAX_LENGTH"]

MAX_LENGTH = 10_000_000  # default limit of to_text / to_latex, in characters
_REPR_LENGTH = 80


def _negative(value: float) -> bool:
    return not math.isnan(value) and math.copysign(1.0, value) < 0


def number_text(value: float) -> str:
    """A float as the parser reads it back exactly: ``2``, ``0.1``, ``1e+20``, ``-inf``, ``pi``;
    an exact constant as its exact text (``1/3``, ``sqrt(2*pi)``)."""
    if value.__class__ is Exact:
        return exact_text(value.form)
    if math.isnan(value):
        return "nan"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    size = abs(value)
    if size == 0.0:
        return sign + "0.0" if sign else "0"  # -0.0 keeps its sign (it is its own node)
    if size == math.inf:
        return sign + "inf"
    if size == math.pi:
        return sign + "pi"
    if size == math.e:
        return sign + "e"
    if size.is_integer() and size < 1e16:
        return sign + str(int(size))
    return sign + repr(size)  # shortest text that reads back as the same float


def _exact_prec(text: str) -> int:
    """The precedence of an exact constant's text: its loosest operator outside parentheses."""
    if text[0] == "-":
        return PREC_NEG
    depth, outer = 0, []
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and c in "*/":
            outer.append(i)
    pows = [i for i in outer if text[i:i + 2] == "**" or text[i - 1:i + 1] == "**"]
    return PREC_MUL if len(outer) > len(pows) else PREC_POW if pows else PREC_ATOM


class _Style:
    """Precedence and parenthesization shared by the text and LaTeX printers."""

    open, close = "(", ")"
    plus, minus, times = " + ", " - ", "*"
    factor_wrap = PREC_MUL  # a factor this loose gets parentheses: x*(y/z), not x*y/z
    # op -> its first operand prints bare (so its text leads the node's text) unless the
    # operand's precedence is at most this
    lead_through: dict[str, int] = {}

    def __init__(self, alias: dict[Node, str] | None = None) -> None:
        self.alias = alias or {}  # nodes printed as a name (to_text_cse temporaries)
        self.leads: dict[Node, bool] = {}

    def ref(self, node: Node):
        return self.alias.get(node, node)

    def const_prec(self, value: float) -> int:
        if value.__class__ is Exact:
            return _exact_prec(number_text(value))
        return PREC_NEG if _negative(value) else PREC_ATOM

    def prec(self, node: Node) -> int:
        if node.op == "const":
            return self.const_prec(node.value)
        if node.op == "symbol" or node in self.alias:
            return PREC_ATOM
        return OPS[node.op].precedence

    def lead(self, node: Node) -> bool:
        """Whether the node's text starts with a minus sign (walks the leftmost operands)."""
        chain = []
        while True:
            known = self.leads.get(node)
            if known is not None:
                result = known
                break
            op = node.op
            if op == "const":
                result = _negative(node.value)
                break
            if op == "neg" and node not in self.alias:
                result = True
                break
            if op == "mul" and node not in self.alias:
                first = node.args[0]
                result = first.op == "const" and _negative(first.value)
                break
            limit = self.lead_through.get(op)
            if limit is None or node in self.alias or self.prec(node.args[0]) <= limit:
                result = False
                break
            chain.append(node)
            node = node.args[0]
        for item in chain:
            self.leads[item] = result
        return result

    def wrapped(self, node: Node, wrap: bool) -> Iterator:
        if wrap:
            yield self.open
            yield self.ref(node)
            yield self.close
        else:
            yield self.ref(node)

    def number(self, value: float) -> str:
        return number_text(value)

    def factors(self, node: Node, negate: bool = False) -> Iterator:
        """A product; with `negate` the (negative) coefficient prints without its sign."""
        args = node.args
        start = 0
        if args[0].op == "const":
            value = args[0].value
            yield self.number(-value if negate else value)
            start = 1
        for i in range(start, len(args)):
            factor = args[i]
            if i:
                yield self.times
            wrap = self.prec(factor) <= self.factor_wrap or self.lead(factor)
            yield from self.wrapped(factor, wrap)

    def terms(self, node: Node) -> Iterator:
        """A sum; a term that is negated prints as ``a - b``, which parses back to it."""
        for i, term in enumerate(node.args):
            if i == 0:
                yield from self.wrapped(term, self.prec(term) <= PREC_COMPARE)
                continue
            if term not in self.alias:
                op = term.op
                if op == "neg":
                    inner = term.args[0]
                    yield self.minus
                    yield from self.wrapped(inner, self.prec(inner) <= PREC_ADD or self.lead(inner))
                    continue
                if op == "const" and _negative(term.value):
                    yield self.minus
                    yield self.number(-term.value)
                    continue
                if op == "mul" and term.args[0].op == "const" and _negative(term.args[0].value):
                    yield self.minus
                    yield from self.factors(term, negate=True)
                    continue
            yield self.plus
            yield from self.wrapped(term, self.prec(term) <= PREC_ADD or self.lead(term))


class _Text(_Style):
    lead_through = {"add": PREC_COMPARE, "div": PREC_ADD,
                    **dict.fromkeys(COMPARISONS, PREC_COMPARE)}
    neg_wrap = PREC_POW  # -(x*y), so that the text parses back to the very node

    def expand(self, node: Node) -> Iterator:
        op, args = node.op, node.args
        if op == "const":
            yield number_text(node.value)
        elif op == "symbol":
            yield node.value
        elif op == "add":
            yield from self.terms(node)
        elif op == "mul":
            yield from self.factors(node)
        elif op == "neg":
            yield "-"
            yield from self.wrapped(args[0], self.prec(args[0]) < self.neg_wrap)
        elif op == "div":
            a, b = args
            yield from self.wrapped(a, self.prec(a) < PREC_MUL)
            yield "/"
            yield from self.wrapped(b, self.prec(b) <= PREC_MUL or self.lead(b))
        elif op == "pow":
            a, b = args
            yield from self.wrapped(a, self.prec(a) < PREC_ATOM)
            yield "**"
            yield from self.wrapped(b, self.prec(b) < PREC_POW or self.lead(b))
        elif OPS[op].comparison:  # no chains, so both sides bind tighter
            a, b = args
            yield from self.wrapped(a, self.prec(a) <= PREC_COMPARE)
            yield f" {OPS[op].infix} "
            yield from self.wrapped(b, self.prec(b) <= PREC_COMPARE)
        else:
            yield OPS[op].call_name + "("
            for i, arg in enumerate(args):
                if i:
                    yield ", "
                yield self.ref(arg)
            yield ")"


class _TidyText(_Text):
    neg_wrap = PREC_MUL  # the display form: -x*y/2 (the same number as -(x*y/2))


# -- LaTeX ------------------------------------------------------------------------------------

_GREEK = set("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho "
             "sigma tau upsilon phi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon "
             "Phi Psi Omega".split())
_LATEX_SPECIAL = {c: "\\" + c for c in "#$%&_{}"}
_LATEX_SPECIAL.update({"\\": r"\textbackslash{}", "~": r"\textasciitilde{}",
                       "^": r"\textasciicircum{}"})


def _latex_word(word: str) -> str:
    if word in _GREEK:
        return "\\" + word
    escaped = "".join(_LATEX_SPECIAL.get(c, c) for c in word)
    return escaped if len(word) == 1 else r"\mathrm{" + escaped + "}"


def _latex_name(name: str) -> str:
    """``x`` -> ``x``, ``alpha`` -> ``\\alpha``, ``x1``/``x_1`` -> ``x_{1}``, ``rate`` -> roman."""
    element = re.fullmatch(r"([A-Za-z]+)\[([0-9,]+)\]", name)  # w[0] -> w_{0}
    if element:
        return f"{_latex_word(element[1])}_{{{element[2]}}}"
    m = re.fullmatch(r"([A-Za-z]+)_?([0-9]+)|([A-Za-z]+)_([A-Za-z0-9]+)", name)
    if m:
        base, sub = (m[1], m[2]) if m[1] else (m[3], m[4])
        return f"{_latex_word(base)}_{{{_latex_word(sub) if not sub.isdigit() else sub}}}"
    return _latex_word(name)


def _split_template(spec) -> list:
    """The op's LaTeX template as literal strings and operand indices (op-table tests check
    that every template formats)."""
    filled = spec.latex.format(*[f"\0{i}\0" for i in range(max(spec.arity, 2))])
    return [int(p) if i % 2 else p for i, p in enumerate(filled.split("\0"))]


_TEMPLATES: dict[str, tuple] = {}  # op -> (its spec, the split template): made on first use


def _template(op: str) -> list:
    spec = OPS[op]
    known = _TEMPLATES.get(op)
    if known is None or known[0] is not spec:  # a registered op, or one registered anew
        known = _TEMPLATES[op] = (spec, _split_template(spec))
    return known[1]


class _Latex(_Style):
    open, close = r"\left(", r"\right)"
    plus = _template("add")[2]  # the separator in "{0} + {1}"
    times = _template("mul")[2]
    factor_wrap = PREC_ADD  # \frac needs no parentheses
    lead_through = {"add": PREC_COMPARE, **dict.fromkeys(COMPARISONS, PREC_COMPARE)}

    def number(self, value: float) -> str:
        if value.__class__ is Exact:
            return exact_text(value.form, latex=True)
        if math.isnan(value):
            return r"\mathrm{NaN}"
        text = number_text(value)
        sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
        if body in ("inf", "pi"):
            return sign + {"inf": r"\infty", "pi": r"\pi"}[body]
        if "e" in body and body != "e":
            mantissa, exponent = body.split("e")
            power = f"10^{{{int(exponent)}}}"
            body = power if mantissa == "1" else rf"{mantissa} \cdot {power}"
        return sign + body

    def const_prec(self, value: float) -> int:
        text = self.number(value)
        if text.startswith("-"):
            return PREC_NEG
        if value.__class__ is Exact:
            return PREC_MUL if " " in text else PREC_POW if "^" in text or "frac" in text \
                else PREC_ATOM
        return PREC_MUL if r"\cdot" in text else PREC_POW if "^" in text else PREC_ATOM

    def expand(self, node: Node) -> Iterator:
        op, args = node.op, node.args
        if op == "const":
            yield self.number(node.value)
            return
        if op == "symbol":
            yield _latex_name(node.value)
            return
        if op == "add":
            yield from self.terms(node)
            return
        if op == "mul":
            yield from self.factors(node)
            return
        parts = _template(op)
        compare = OPS[op].comparison
        for i, part in enumerate(parts):
            if i % 2 == 0:
                if part:
                    yield part
                continue
            arg = args[part]
            p = self.prec(arg)
            if compare:
                wrap = p <= PREC_COMPARE
            elif re.match(r"\}*\^", parts[i + 1]):  # a superscript follows: group the operand
                wrap = p < PREC_ATOM
            elif parts[i - 1].endswith("-"):  # -{0}
                wrap = p <= PREC_ADD
            else:  # the template delimits the operand itself (\frac{}, \left( \right), ...)
                wrap = False
            yield from self.wrapped(arg, wrap)


# -- writing -----------------------------------------------------------------------------------


def _write(first: Iterator, parts_of: Callable[[Node], Iterator], limit: int | None = None):
    """Write out parts depth first with an explicit stack; stop once past `limit` chars."""
    out: list[str] = []
    total = 0
    stack = [first]
    while stack:
        for part in stack[-1]:
            if part.__class__ is str:
                out.append(part)
                if limit is not None:
                    total += len(part)
                    if total > limit:
                        return out, True
            else:
                stack.append(parts_of(part))
                break
        else:
            stack.pop()
    return out, False


def _check(node) -> None:
    if not isinstance(node, Node):
        raise TypeError(f"expected a symgraph Node, got {type(node).__name__}")


@bulk  # printing allocates many small containers: no collector passes over them
def _render(style: _Style, node: Node, max_length: int | None) -> str:
    _check(node)
    forms: dict[Node, list] = {}
    sizes: dict[Node, int] = {}
    cap = None if max_length is None else max_length + 1
    for n in topological_order([node]):  # exact printed size first: sharing can blow it up
        parts = list(style.expand(n))
        size = 0
        for part in parts:
            size += len(part) if part.__class__ is str else sizes[part]
        forms[n] = parts
        sizes[n] = size if cap is None else min(size, cap)
    if cap is not None and sizes[node] >= cap:
        raise ValueError(
            f"the expression prints as more than max_length={max_length} characters (shared "
            "subexpressions repeat in flat text); use to_text_cse for the shared form or pass "
            "a larger max_length")
    out, _ = _write(iter(forms[node]), lambda n: iter(forms[n]))
    return "".join(out)


def to_text(node: Node, max_length: int | None = MAX_LENGTH, *, tidy: bool = True) -> str:
    """Python/SymPy syntax with minimal parentheses, e.g. ``x**2 + 2*x + 1``.

    With `tidy` (the default) the display form (`ir.tidy`): what a person would write, the same
    value; ``tidy=False`` prints the DAG's own form, which `parse` reads back to the same node.
    Raises ValueError if the text would be longer than `max_length` characters (``None``: no
    limit); `to_text_cse` prints heavily shared expressions compactly.
    """
    if not tidy:
        return _render(_Text(), node, max_length)
    _check(node)
    return _render(_TidyText(), tidy_many([node])[0], max_length)


def to_latex(node: Node, max_length: int | None = MAX_LENGTH, *, tidy: bool = True) -> str:
    """LaTeX from the ``latex`` templates of the op table, e.g. ``\\sin\\left(x\\right)``;
    of the display form unless ``tidy=False`` (as for `to_text`)."""
    if tidy:
        _check(node)
        node = tidy_many([node])[0]
    return _render(_Latex(), node, max_length)


@bulk
def to_text_cse(outputs: Sequence[Node], names: Sequence[str], *, tidy: bool = True) -> str:
    """The shared form: ``t0 = exp(x)`` for each op node used more than once, then one
    ``name = expression`` line per output. Lines are joined by newlines. With `tidy`, of the
    display form, where the DAG's shared nodes stay whole (so they keep their lines)."""
    outputs, names = list(outputs), list(names)
    if len(outputs) != len(names):
        raise ValueError(f"{len(outputs)} outputs but {len(names)} names")
    for node in outputs:
        _check(node)
    if tidy:
        outputs = tidy_many(outputs, keep=_shared(outputs))
    order = topological_order(outputs)
    uses: dict[Node, int] = {}
    for node in [arg for n in order for arg in n.args] + outputs:
        uses[node] = uses.get(node, 0) + 1
    shared = [n for n in order if n.args and uses[n] > 1]
    taken = {n.value for n in order if n.op == "symbol"} | set(names)
    prefix = "t"
    while any(re.fullmatch(re.escape(prefix) + r"[0-9]+", name) for name in taken):
        prefix = "_" + prefix  # temporaries must not shadow a symbol or an output
    alias = {node: f"{prefix}{i}" for i, node in enumerate(shared)}
    style = _TidyText(alias) if tidy else _Text(alias)
    lines = []
    for target, node in [(alias[n], n) for n in shared] + list(zip(names, outputs)):
        if node in alias and alias[node] != target:
            text = alias[node]
        else:  # every op node left inline is used once, so this is linear overall
            text = "".join(_write(style.expand(node), style.expand)[0])
        lines.append(f"{target} = {text}")
    return "\n".join(lines)


def _shared(outputs: list[Node]) -> set[Node]:
    seen: set[Node] = set()
    shared: set[Node] = set()
    for node in topological_order(outputs):
        for arg in node.args:
            (shared if arg in seen else seen).add(arg)
    return shared


def _short_text(node: Node, limit: int = _REPR_LENGTH) -> str:
    """At most `limit` characters of the text, doing work only for what is shown."""
    style = _Text()
    out, cut = _write(style.expand(node), style.expand, limit)
    text = "".join(out)
    return text[: limit - 3] + "..." if cut else text


def _node_repr(self: Node) -> str:
    try:
        return f"Node({_short_text(self)})"
    except Exception:  # repr must never fail
        return f"<Node {self.op}>"


def _node_repr_latex(self: Node) -> str | None:
    try:
        return f"${to_latex(self, max_length=100_000)}$"
    except ValueError:
        return None  # too large to show: Jupyter falls back to repr


Node.__str__ = to_text
Node.__repr__ = _node_repr
Node._repr_latex_ = _node_repr_latex
