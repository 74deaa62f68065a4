"""Reading the command line's input: expressions (argument, -f FILE, stdin), --wrt, --at.

Every problem with the input is a `UsageError` (exit code 2) whose message is one paragraph;
parse errors keep the parser's caret under the bad position.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from ..ir.evaluate import free_symbols
from ..ir.node import Node
from ..ir.ops import CONSTANTS

_NAMED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)")
_AT_ITEM = re.compile(r"\s*([^\W\d]\w*(?:\[[0-9]+(?:,[0-9]+)*\])?)\s*=\s*(\S.*?)\s*$")
_COMMA = re.compile(r",(?![0-9,]*\])")  # a separator, not the comma of an element W[0,1]


class UsageError(ValueError):
    """Bad input from the user: exit code 2."""


class Failure(RuntimeError):
    """Anything else that stops a command with a message: exit code 1."""


# -- reading expressions -------------------------------------------------------------------------


def _sources(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(text, where) of each expression: the arguments, or the lines of -f FILE / stdin."""
    if args.file is not None and args.exprs:
        raise UsageError("give the expression either as an argument or with -f, not both")
    if args.file is None and args.exprs != ["-"]:
        if not args.exprs:
            raise UsageError("no expression given: pass it as an argument, with -f FILE, "
                             "or as '-' to read standard input")
        if "-" in args.exprs:
            raise UsageError("'-' (standard input) cannot be mixed with other expressions")
        return [(text, "") for text in args.exprs]
    origin = "standard input" if args.file in (None, "-") else args.file
    if args.file in (None, "-"):
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"cannot read {args.file}: {error}") from None
    text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark (Windows editors write one)
    binary = _BINARY.search(text)
    if binary:
        line = text.count("\n", 0, binary.start()) + 1
        raise UsageError(f"{origin} is not text: it holds binary data (byte "
                         f"{ascii(binary.group())} on line {line}); give expressions as UTF-8 "
                         "text, one a line")
    lines = [(line, f" (line {number} of {origin})")
             for number, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise UsageError(f"{origin} holds no expression")
    return lines


def read_expressions(args: argparse.Namespace, count: str = "one") -> tuple[list[str], list[Node]]:
    """(names, nodes); `count` is "one" or "many". Parse errors keep the parser's caret."""
    from ..frontends.parser import parse  # the parser is a sibling stage; import on use

    sources = _sources(args)
    if count == "one" and len(sources) > 1:
        raise UsageError(f"{args.command} takes one expression, got {len(sources)} "
                         "(jacobian, codegen and graph take several)")
    names, nodes = [], []
    for index, (text, where) in enumerate(sources):
        match = _NAMED.match(text)
        if match:  # blank the label out, so error positions still point into the text
            text = " " * match.end() + text[match.end():]
        try:
            nodes.append(parse(text, variables=declared_names(args)))
        except (ValueError, TypeError, RecursionError, OverflowError) as error:
            raise UsageError(f"cannot read the expression{where}: {error}") from None
        default = "f" if len(sources) == 1 else f"f{index}"
        names.append(match.group(1) if match else default)
    if len(set(names)) != len(names):
        raise UsageError(f"two expressions have the same name: {', '.join(names)}")
    return names, nodes


def declared_names(args: argparse.Namespace) -> list[str]:
    """The names --wrt and --at give: variables, even ``e``, ``E`` or ``pi`` (Kepler's
    ``E - e*sin(E) - M --wrt E``); elsewhere those names are constants."""
    names = [w.strip() for item in getattr(args, "wrt", None) or [] for w in _COMMA.split(item)]
    for group in getattr(args, "at", None) or []:
        for item in _COMMA.split(group):
            match = _AT_ITEM.match(item)
            if match:
                names.append(match.group(1))
    return [n for n in names if n]


def variables_of(args: argparse.Namespace, exprs: Sequence[Node]) -> list[str]:
    """The --wrt names (checked against the expressions), else every variable by name."""
    known = [s.value for s in free_symbols(exprs)]
    if not args.wrt:
        return known
    wanted = [w.strip() for item in args.wrt for w in _COMMA.split(item)]
    for w in wanted:
        if w not in known:
            listed = ", ".join(known) or "none"
            raise UsageError(f"--wrt names {w!r}, which is not a variable of the expression "
                             f"(its variables: {listed})")
    if len(set(wanted)) != len(wanted):
        raise UsageError("--wrt names a variable twice")
    return wanted


_INFINITE = {"inf", "infinity", "oo"}
# NUL and other C0 controls but tab/newline/CR, and the surrogates undecodable bytes become
_BINARY = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\udc80-\udcff]")


def _number(raw: str) -> float | None:
    """A float from --at's text: a literal, or a named constant with an optional sign
    (``-pi``, ``+e``, ``-inf``); None if it is neither."""
    sign, name = (-1.0, raw[1:]) if raw[:1] == "-" else (1.0, raw[1:] if raw[:1] == "+" else raw)
    if name in CONSTANTS:
        return sign * CONSTANTS[name]
    try:
        return float(raw)
    except ValueError:
        return None


def parse_point(items: Sequence[str] | None, needed: Sequence[str]) -> dict[str, float]:
    """``--at x=3,y=2`` (or repeated --at): a value for exactly the expression's variables."""
    point: dict[str, float] = {}
    for item in [p for group in items or [] for p in _COMMA.split(group) if p.strip()]:
        match = _AT_ITEM.match(item)
        if not match:
            raise UsageError(f"--at takes NAME=NUMBER pairs separated by commas, like "
                             f"--at x=3,y=2; cannot read {item.strip()!r}")
        name, raw = match.groups()
        value = _number(raw)
        if value is None:
            raise UsageError(f"--at {name}={raw}: {raw!r} is not a number")
        if math.isinf(value) and raw.lstrip("+-").lower() not in _INFINITE:
            raise UsageError(f"--at {name}={raw}: {raw!r} is beyond float64's range "
                             f"(±{sys.float_info.max:.6g}); write inf or -inf for infinity")
        if name in point:
            raise UsageError(f"--at gives {name} twice")
        if name not in needed:
            listed = ", ".join(needed) or "none"
            raise UsageError(f"--at gives a value for {name}, which is not a variable of the "
                             f"expression (its variables: {listed})")
        point[name] = value
    missing = [n for n in needed if n not in point]
    if missing:
        example = ",".join(f"{n}=1" for n in needed)
        raise UsageError(f"no value for {', '.join(missing)}: give every variable with --at, "
                         f"like --at {example}")
    return {n: point[n] for n in needed}
