"""A safe, iterative parser from Python-syntax text to DAG nodes.

Nothing here evaluates the input: `lexer.scan` tokenizes it and an operator-precedence loop with
explicit stacks builds nodes through `graph.apply`. There is no recursion at all, so nesting depth
is limited only by memory.

Grammar (Python's precedence, loosest first)::

    comparison := sum [cmp sum]             (a < b < c is an error, not a chain)
    sum        := product (('+' | '-') product)*
    product    := factor (('*' | '/') factor)*
    factor     := ('+' | '-') factor | power
    power      := primary [('**' | '^') factor]
    primary    := number | name | name '(' args ')' | '(' comparison ')'

A run of ``+``/``-`` terms becomes one ``add`` node and a run of ``*`` factors one ``mul`` node
(apply flattens nested ones anyway, and building them pair by pair is quadratic). For the same
reason a parenthesized sum used directly as a term of a sum, or a product as a factor of a
product, is spliced into the outer run: ``(a + b) + c`` is built as ``add(a, b, c)``, exactly
as `apply` would flatten it (so only runs of up to `graph.FLATTEN_LIMIT` operands).
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterable, Mapping

from ..ir.node import FLATTEN_LIMIT, Node, apply, const, symbol
from ..ir.ops import CALLS, CONSTANTS, INFIX, OPS
from ..ir.traversal import bulk
from .lexer import ParseError, scan, shorten

__all__ = ["parse", "ParseError"]

_COMPARE = {s: spec.name for s, spec in INFIX.items() if spec.comparison}
LOG = "log"  # log(x, base) is log(x) / log(base)


class _Run:
    """A parenthesized sum or product not yet built, so the enclosing run can absorb it."""

    __slots__ = ("op", "items")

    def __init__(self, op: str, items: deque) -> None:
        self.op, self.items = op, items


def _join(first: deque | tuple, second: deque) -> deque:
    # Keep text order, but copy the shorter side: nesting on either side stays linear.
    if first and len(first) >= len(second):
        first.extend(second)
        return first
    second.extendleft(reversed(first))
    return second


class _Frame:
    """The state of one parenthesized group, call argument list or the whole input."""

    __slots__ = ("kind", "pos", "name", "paren", "args", "cmp", "terms", "negate", "sign_pos",
                 "factors", "div_pos", "prefix")

    def __init__(self, kind: str, pos: int, name: str | None = None, paren: int = 0) -> None:
        self.kind, self.pos, self.name = kind, pos, name  # pos: the '(', or a call's name
        self.paren = paren if name else pos
        self.args: list[Node] = [] if name else None
        self.prefix: list[tuple] = []  # unary minus and pow bases of the factor being read
        self.reset()

    def reset(self) -> None:
        # Deques are made on first use: a deep nest of '(' allocates as little as possible.
        self.cmp: tuple | None = None  # (left node, op name, position) of a comparison
        self.terms: deque | tuple = ()  # finished terms of the current sum
        self.negate = False  # the term being read follows a binary '-'
        self.sign_pos = 0
        self.factors: deque | tuple = ()  # finished factors of the current product
        self.div_pos: int | None = None  # the factor being read follows a '/'


class _Parser:
    def __init__(self, text: str, symbols: Mapping[str, Node] | None,
                 variables: frozenset[str] = frozenset()) -> None:
        self.text = text
        self.symbols = symbols
        self.variables = variables  # names that are symbols even where a constant is named so
        self.names: dict[str, Node] = {}  # names seen so far: repeats skip the lookup
        self.pos = 0

    def error(self, pos: int, reason: str) -> ParseError:
        return ParseError(self.text, pos, reason)

    def apply(self, op: str, args, pos: int) -> Node:
        try:
            return apply(op, *[self.node(a, pos) for a in args])
        except ParseError:
            raise
        except Exception as exc:  # whatever graph rules raise, report it at the operator
            raise self.error(pos, f"cannot build {op}(): {exc}") from None

    def node(self, value, pos: int) -> Node:
        if isinstance(value, _Run):
            return self.apply(value.op, value.items, pos)
        return value

    # -- names ---------------------------------------------------------------------------------
    def variable(self, name: str, pos: int) -> Node:
        node = self.names.get(name)
        if node is None:
            node = self.names[name] = self.lookup(name, pos)
        return node

    def lookup(self, name: str, pos: int) -> Node:
        if self.symbols is not None and name in self.symbols:
            value = self.symbols[name]  # an explicit mapping wins over the named constants
            if isinstance(value, Node):
                return value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return const(value)
            raise TypeError(f"symbols[{name!r}] must be a Node or a number, "
                            f"not {type(value).__name__}")
        if name in CONSTANTS and name not in self.variables:
            return const(CONSTANTS[name])
        if self.symbols is not None:
            raise self.error(pos, f"unknown variable {shorten(name)}")
        return symbol(name)

    def function(self, name: str, pos: int) -> str:
        """The op a call name stands for; unknown names are reported before the arguments."""
        op = CALLS.get(name)
        if op is not None:
            return op
        if name in CONSTANTS:
            raise self.error(pos, f"{name!r} is a constant, not a function; "
                                  f"write {name}*(...) to multiply")
        raise self.error(pos, f"unknown function {shorten(name)}")

    def call(self, frame: _Frame) -> Node:
        name, pos, args = frame.name, frame.pos, frame.args
        op = CALLS[name]
        spec = OPS[op]
        n = len(args)
        if op == LOG and n == 2:
            return self.apply("div", (self.apply(LOG, args[:1], pos),
                                      self.apply(LOG, args[1:], pos)), pos)
        if spec.folds and n >= spec.arity:  # min(a, b, c) is min(min(a, b), c)
            value = args[0]
            for arg in args[1:]:
                value = self.apply(op, (value, arg), pos)
            return value
        expected = spec.arity
        if n != expected:
            count = ("1 or 2" if op == LOG else f"at least {expected}" if spec.folds
                     else str(expected))
            plural = "" if count == "1" else "s"
            raise self.error(pos, f"{name}() takes {count} argument{plural} ({n} given)")
        return self.apply(op, args, pos)

    # -- the precedence levels of one frame --------------------------------------------------
    def end_factor(self, frame: _Frame, value) -> None:
        """`value` is a primary; apply the pending unary minus / powers and join the product."""
        prefix = frame.prefix
        while prefix:
            item = prefix.pop()
            if item[0] == "neg":
                value = self.apply("neg", (value,), item[1])
            else:
                value = self.apply("pow", (item[1], value), item[2])
        if frame.div_pos is not None:
            left = self.end_product(frame)
            value = self.apply("div", (left, value), frame.div_pos)
            frame.div_pos = None
        if isinstance(value, _Run) and value.op == "mul" and len(value.items) <= FLATTEN_LIMIT:
            frame.factors = _join(frame.factors, value.items)
            return
        value = self.node(value, frame.pos)  # runs never nest, so building them never recurses
        if frame.factors:
            frame.factors.append(value)
        else:
            frame.factors = deque((value,))

    def end_product(self, frame: _Frame):
        factors, frame.factors = frame.factors, ()
        return factors[0] if len(factors) == 1 else self.apply("mul", factors, frame.pos)

    def end_term(self, frame: _Frame) -> None:
        term = self.end_product(frame)
        if frame.negate:
            term = self.apply("neg", (term,), frame.sign_pos)
        if isinstance(term, _Run) and term.op == "add" and len(term.items) <= FLATTEN_LIMIT:
            frame.terms = _join(frame.terms, term.items)
            return
        term = self.node(term, frame.pos)  # runs never nest, so building them never recurses
        if frame.terms:
            frame.terms.append(term)
        else:
            frame.terms = deque((term,))

    def end_expression(self, frame: _Frame, lazy: bool):
        """The frame's whole value; with `lazy` a bare sum or product may stay a `_Run`."""
        if lazy and frame.cmp is None and not frame.terms and len(frame.factors) > 1:
            value = _Run("mul", frame.factors)
        else:
            self.end_term(frame)
            terms = frame.terms
            if len(terms) == 1:
                value = terms[0]
            elif lazy and frame.cmp is None:
                value = _Run("add", terms)
            else:
                value = self.apply("add", terms, frame.pos)
            if frame.cmp is not None:
                left, op, pos = frame.cmp
                value = self.apply(op, (left, value), pos)
        frame.reset()
        return value if lazy else self.node(value, frame.pos)

    # -- the token loop ------------------------------------------------------------------------
    def run(self) -> Node:
        text = self.text
        tokens = scan(text)
        frames = [_Frame("top", 0)]
        frame = frames[-1]
        operand = None  # the primary just read, before any '**' that follows it
        prev = None  # the previous token, for messages and for '()' / trailing commas
        tok = next(tokens)
        while True:
            kind, value, pos, end = tok
            self.pos = pos
            if operand is None:  # expecting an operand
                if kind == "num":
                    operand = const(value)
                elif kind == "name":
                    following = next(tokens)
                    if following[0] == "op" and following[1] == "(":
                        self.function(value, pos)  # unknown names fail before the arguments
                        frame = _Frame("call", pos, value, following[2])
                        frames.append(frame)
                        prev, tok = following, next(tokens)
                        continue
                    operand = self.variable(value, pos)
                    prev, tok = tok, following
                    continue
                elif kind == "op" and value == "(":
                    frame = _Frame("paren", pos)
                    frames.append(frame)
                elif kind == "op" and value == "-":
                    prefix = frame.prefix
                    if prefix and prefix[-1][0] == "neg":
                        prefix.pop()  # --x is x for every node (graph rule), so cancel now
                    else:
                        prefix.append(("neg", pos))
                elif kind == "op" and value == "+":
                    pass  # unary plus is the identity
                elif value == ")" and prev is not None and prev[1] in ("(", ","):
                    if frame.kind == "paren":
                        raise self.error(prev[2], "empty parentheses '()' are not an expression")
                    if frame.kind == "call" and (prev[1] == "(" or frame.args):
                        operand = self.close(frames)  # f() or a trailing comma: f(x,)
                        frame = frames[-1]
                    else:
                        raise self.error(pos, "expected an expression before ')'")
                else:
                    raise self.missing_operand(frames, tok, prev)
                prev, tok = tok, next(tokens)
                continue

            # An operand is in hand: an operator (or the end) must follow.
            if kind == "op" and value == "**":
                frame.prefix.append(("pow", self.node(operand, pos), pos))
                operand = None
                prev, tok = tok, next(tokens)
                continue
            if frame.prefix and isinstance(operand, _Run):
                operand = self.node(operand, pos)
            self.end_factor(frame, operand)
            operand = None
            if kind == "op":
                if value == "*":
                    pass
                elif value == "/":
                    frame.div_pos = pos
                elif value in "+-":
                    self.end_term(frame)
                    frame.negate, frame.sign_pos = value == "-", pos
                elif value in _COMPARE:
                    if frame.cmp is not None:
                        raise self.error(pos, "chained comparisons like 'a < b < c' are not "
                                              "supported; use parentheses")
                    left = self.end_expression(frame, lazy=False)
                    frame.cmp = (left, _COMPARE[value], pos)
                elif value == ",":
                    if frame.kind != "call":
                        raise self.error(pos, "',' outside a function call (tuples are not "
                                              "supported)")
                    frame.args.append(self.end_expression(frame, lazy=False))
                elif value == ")":
                    if frame.kind == "top":
                        raise self.error(pos, "unmatched ')'")
                    operand = self.close(frames)
                    frame = frames[-1]
                else:  # '('
                    raise self.error(pos, "expected an operator before '(' (calling an "
                                          "expression is not supported)")
            elif kind == "end":
                if frame.kind != "top":
                    raise self.unclosed(frame)
                return self.end_expression(frame, lazy=False)
            else:
                raise self.error(pos, f"expected an operator before {shorten(text[pos:end])}")
            prev, tok = tok, next(tokens)

    def close(self, frames: list[_Frame]):
        frame = frames.pop()
        if frame.kind == "paren":
            return self.end_expression(frame, lazy=True)
        if frame.terms or frame.factors or frame.cmp is not None:
            frame.args.append(self.end_expression(frame, lazy=False))
        return self.call(frame)

    def unclosed(self, frame: _Frame) -> ParseError:
        if frame.kind == "call":
            return self.error(frame.paren, f"'(' of {shorten(frame.name + '(')} is never closed")
        return self.error(frame.paren, "'(' is never closed")

    def missing_operand(self, frames: list[_Frame], tok, prev) -> ParseError:
        kind, _, pos, end = tok
        if kind == "end":
            if prev is None:
                return self.error(0, "empty expression")
            if frames[-1].kind != "top" and prev[1] == "(":
                return self.unclosed(frames[-1])
            after = shorten(self.text[prev[2] : prev[3]])
            return self.error(pos, f"unexpected end of input after {after}; "
                                   "expected an expression")
        shown = shorten(self.text[pos:end])
        if tok[1] == ")" and frames[-1].kind == "top":
            return self.error(pos, "unmatched ')'")
        return self.error(pos, f"expected an expression before {shown}")


@bulk
def parse(text: str, symbols: Mapping[str, Node] | None = None, *,
          variables: Iterable[str] | None = None) -> Node:
    """Parse Python-syntax math into a node, e.g. ``parse("x**2 + sin(y)")``.

    Names followed by ``(`` are functions (the ops' `spellings`, `ops.CALLS`: names, SymPy and
    NumPy aliases, ``pow``; two-argument ``log(x, base)``; ops that `fold` take any number of
    arguments, ``min(a, b, c)``); other names are constants (`ops.CONSTANTS`) or
    symbols. The constants are ``pi``, ``e`` and ``E`` (Euler's number), ``inf``, ``oo`` and
    ``nan``; names in `variables` are symbols even so (Kepler's ``E - e*sin(E) - M`` with
    ``variables=["E", "e", "M"]``). With `symbols`, only its names are variables, mapped to its
    nodes (a name in it also overrides a constant of the same name). Numbers are float64, and
    literal arithmetic is exact (``1/3``, ``sqrt(2*pi)``: `ir.exact`). Raises `ParseError` with
    the position for any invalid input, and TypeError if `text` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() needs a str, not {type(text).__name__}")
    if isinstance(variables, str):
        variables = variables.replace(",", " ").split()
    declared = frozenset(str(v.name if isinstance(v, Node) else v) for v in variables or ())
    parser = _Parser(text, symbols, declared)
    # Parsing allocates many containers and frees none of them, so the cyclic collector only
    # burns time (3x on deep nesting); pause it for the duration.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return parser.run()
    except (RecursionError, MemoryError, OverflowError) as exc:
        reason = "the expression is too large to build"
        raise ParseError(text, parser.pos, f"{reason} ({type(exc).__name__})") from None
    finally:
        if collecting:
            gc.enable()
