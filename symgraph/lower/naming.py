"""All naming rules for generated code, in one place.

Generated names never clash: symbols become safe identifiers that cannot be keywords, builtins,
module names, temporaries (``t0``), output labels (``f``, ``df_dx``, ``d2f_dx_dy``) or the
kernel's own parameters (``_x``, ``_out``...). No symbol name can inject code.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable, Sequence

# Names the emitted modules use themselves.
# ("out": the keyword of the one-point functions that unpack the inputs by name.)
RESERVED = frozenset({"math", "np", "numpy", "numba", "njit", "prange", "float", "out"}
                     ) | frozenset(dir(builtins))
_GENERATED = re.compile(r"(t\d+|f\d*|d\d*f\d*_.*|_.*)$")
_SAFE_CHAR = re.compile(r"[^A-Za-z0-9_]")


def _sanitize(name: str) -> str:
    # ASCII only: non-ASCII characters become their code point, so 'θ' -> 'u3b8'.
    ascii_name = "".join(c if c.isascii() else f"u{ord(c):x}" for c in name)
    ident = _SAFE_CHAR.sub("_", ascii_name) or "v"
    if ident[0].isdigit() or ident[0] == "_":
        ident = "v" + ident
    if keyword.iskeyword(ident) or ident in RESERVED or _GENERATED.match(ident):
        ident += "_"
    return ident


def unique(names: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """Make names unique (in order) by suffixing ``_2``, ``_3``... where they repeat."""
    used = set(taken)
    result = []
    for name in names:
        candidate, k = name, 2
        while candidate in used:
            candidate, k = f"{name}_{k}", k + 1
        used.add(candidate)
        result.append(candidate)
    return result


def input_identifiers(symbol_names: Sequence[str]) -> list[str]:
    """Safe, distinct Python identifiers for the input symbols, in order."""
    return unique(_sanitize(n) for n in symbol_names)


def value_labels(count: int) -> list[str]:
    return ["f"] if count == 1 else [f"f{i}" for i in range(count)]


def gradient_labels(inputs: Sequence[str], output: str = "f") -> list[str]:
    return [f"d{output}_d{v}" for v in inputs]


def hessian_labels(inputs: Sequence[str]) -> list[list[str]]:
    return [[f"d2f_d{a}_d{b}" for b in inputs] for a in inputs]


def comment_text(text: str, limit: int = 200) -> str:
    """User text made safe for a `#` comment: one line, printable, bounded."""
    clean = "".join(c if c.isprintable() else "?" for c in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def docstring_text(text: str, limit: int = 200) -> str:
    """User text made safe inside a triple-quoted string: quotes and backslashes escaped."""
    return comment_text(text, limit).replace("\\", "\\\\").replace('"', '\\"')
