"""Tokens for the expression parser: a hand-written scanner, never Python's own tokenizer.

`scan` yields ``(kind, value, start, end)`` tuples lazily (a 1 MB input would otherwise hold a
million token tuples at once). Kinds: ``"num"`` (value: a float), ``"name"`` (value: the
identifier, or an array element's symbol such as ``w[0]`` or ``W[0,1]``), ``"op"`` (value: the
operator, ``^`` already spelled ``**``) and a final ``"end"``.
Everything else is a `ParseError` that points at the offending character.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Iterator

Token = tuple  # (kind, value, start, end)

_DIGITS = r"[0-9](?:_?[0-9])*"
_TOKEN = re.compile(
    rf"""[ \t\r\n]*(?:
      (?P<num>0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+
             |(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?)
     |(?P<name>[^\W\d]\w*)
     |(?P<bad>//|<<|>>)
     |(?P<op>\*\*|<=|>=|==|!=|[-+*/^(),<>])
    )?""",
    re.VERBOSE,
)
_NUMBER_TAIL = re.compile(r"[\w.]*")  # what a malformed number runs on into, for the message
_NAME_TAIL = re.compile(r"\w*")
_INDEX = re.compile(r"\[[0-9]+(?:,[0-9]+)*\]")  # w[0], W[0,1]: an array element's symbol
_KEYWORDS = frozenset(keyword.kwlist)
_BITS = {16: 4, 8: 3, 2: 1}
_MAX_BITS = 1030  # past 2**1024 a float is inf; never build a bigger int than this

# Characters that are Python syntax but not ours, with the reason given to the user.
_UNSUPPORTED = {
    "%": "'%' (modulo) is not supported",
    "@": "'@' (matrix multiplication) is not supported",
    "&": "bitwise operators are not supported",
    "|": "bitwise operators are not supported",
    "~": "bitwise operators are not supported",
    "=": "'=' (assignment) is not supported; use '==' to compare",
    "!": "'!' is not supported; use '!=' for 'not equal'",
    ";": "';' is not supported: the input is a single expression",
    ":": "':' is not supported (no lambda, slices or annotations)",
    "[": "brackets (lists, indexing) are not supported",
    "]": "brackets (lists, indexing) are not supported",
    "{": "braces (sets, dicts) are not supported",
    "}": "braces (sets, dicts) are not supported",
    "'": "strings are not supported",
    '"': "strings are not supported",
    ".": "attribute access is not supported",
    "#": "comments are not supported",
    "\\": "backslashes are not supported",
}


class ParseError(ValueError):
    """Text that is not a valid expression. `position` is a 0-based offset into `text`."""

    def __init__(self, text: str, position: int, reason: str) -> None:
        self.text = text
        self.position = position
        self.reason = reason
        super().__init__(format_error(text, position, reason))

    def __reduce__(self):
        return (type(self), (self.text, self.position, self.reason))


def shorten(s: str, limit: int = 40) -> str:
    """`repr` of a piece of user text, cut so that messages stay one short paragraph."""
    return repr(s) if len(s) <= limit else repr(s[: limit - 3]) + "..."


def format_error(text: str, position: int, reason: str, width: int = 80) -> str:
    """``reason at column C:`` then the line (or a window of it) and a caret under `position`."""
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    line = text[start : len(text) if end < 0 else end]
    column = position - start
    where = f"column {column + 1}"
    if "\n" in text:
        where = f"line {text.count(chr(10), 0, position) + 1}, {where}"
    lo, hi = 0, len(line)
    if len(line) > width:  # a window around the position, marked with ellipses
        lo = max(0, min(column - width // 2, len(line) + 1 - width))
        hi = min(len(line), lo + width)
    shown = "".join(c if c.isprintable() else " " if c == "\t" else "?" for c in line[lo:hi])
    if lo > 0:
        shown = "..." + shown[3:]
    if hi < len(line):
        shown = shown[:-3] + "..."
    return f"{reason} at {where}:\n    {shown}\n    {' ' * (column - lo)}^"


def _number(text: str, literal: str, start: int) -> float:
    digits = literal.replace("_", "")
    if len(digits) > 1 and digits[1] in "xXoObB":
        base = {"x": 16, "o": 8, "b": 2}[digits[1].lower()]
        significant = digits[2:].lstrip("0")
        if len(significant) * _BITS[base] > _MAX_BITS:
            return math.inf
        try:
            return float(int(significant or "0", base))
        except OverflowError:
            return math.inf
    if digits.isdigit() and digits[0] == "0" and digits.strip("0"):
        raise ParseError(text, start, "leading zeros in a decimal integer are not allowed "
                                      "(write 0o17 for octal)")
    return float(digits)  # correctly rounded; huge exponents give inf, never big ints


def _bad_character(text: str, i: int) -> ParseError:
    c = text[i]
    if c == "/" and text.startswith("//", i):
        return ParseError(text, i, "'//' (floor division) is not supported; use floor(a / b)")
    if c in "<>" and text[i : i + 2] in ("<<", ">>"):
        return ParseError(text, i, "bitwise shifts are not supported")
    if c in _UNSUPPORTED:
        return ParseError(text, i, _UNSUPPORTED[c])
    if c == "\0":
        return ParseError(text, i, "NUL character in the input")
    if not c.isprintable():
        return ParseError(text, i, f"control or invisible character U+{ord(c):04X}")
    return ParseError(text, i, f"unexpected character {c!r}")


def _name_end(text: str, i: int) -> int:
    """End of the identifier starting at `i`: \\w plus other XID characters (combining marks)."""
    n = len(text)
    while i < n and not text[i].isascii() and ("_" + text[i]).isidentifier():
        i = _NAME_TAIL.match(text, i + 1).end()
    return i


def scan(text: str) -> Iterator[Token]:
    n = len(text)
    pos = 0
    match = _TOKEN.match
    while True:
        m = match(text, pos)
        kind = m.lastgroup
        if kind is None:
            start = m.end()
            if start >= n:
                yield ("end", None, n, n)
                return
            if text[start].isascii() or not text[start].isidentifier():
                raise _bad_character(text, start)
            kind, end = "name", start + 1  # a start character \w does not cover (e.g. U+2118)
        else:
            start, end = m.start(kind), m.end()
        if kind == "bad":
            raise _bad_character(text, start)
        if kind == "op":
            value = text[start:end]
            yield ("op", "**" if value == "^" else value, start, end)
        elif kind == "num":
            literal = text[start:end]
            if end < n and (text[end] in "._" or text[end].isalnum()):
                if text[end] in "jJ" and not text[end + 1 : end + 2].isalnum():
                    raise ParseError(text, end, "complex numbers are not supported")
                bad = text[start : _NUMBER_TAIL.match(text, end).end()]
                raise ParseError(text, end, f"malformed number {shorten(bad)}")
            yield ("num", _number(text, literal, start), start, end)
        else:
            if end < n and not text[end].isascii():
                end = _name_end(text, _NAME_TAIL.match(text, end).end())
            name = text[start:end]
            # \w admits a few characters identifiers do not (e.g. ²); ASCII \w never does
            if not name.isascii() and not name.isidentifier():
                bad = next(i for i in range(1, len(name) + 1) if not name[:i].isidentifier())
                raise ParseError(text, start + bad - 1,
                                 f"character {name[bad - 1]!r} cannot be part of a name")
            if name in _KEYWORDS:
                raise ParseError(text, start,
                                 f"Python keyword {name!r} is not supported in expressions")
            index = _INDEX.match(text, end)  # symbols of traced array parameters read back
            if index:
                end = index.end()
                name = text[start:end]
            yield ("name", name, start, end)
        pos = end
