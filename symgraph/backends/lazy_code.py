"""Functions of a generated module whose bytecode is loaded on their first call.

A Numba module's ``NAME_steps`` and ``NAME_lanes`` hold most of its text (a 1,000-operation
gradient: 1 MB of bytecode, ~4 ms to unmarshal in a fresh process), yet nothing runs them as
Python: the runtime's lowering reads their *text* when Numba compiles, and a warm process
loads machine code. So the bytecode a module is imported from can carry, for each of them, a
stub with the same name, file, first line and parameters, whose body fetches the function's
real code (the module's whole bytecode, checked as on import), puts it in place and calls it:
`module.value_grad_steps(x, out)` computes as ever, `inspect.getsource` finds its text, and
`unstubbed` gives the real function to anything that compiles its bytecode (the runtime's
plain fallback).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import CodeType, FunctionType
from typing import Any

FETCH = "_symgraph_body"  # the global a stub calls with its name: the real function
_SIMPLE_FLAGS = 0x04 | 0x08 | 0x20 | 0x80 | 0x100 | 0x200  # *args, **kw, generators, async
_lock = threading.Lock()


def _stub(code: CodeType) -> CodeType | None:
    """A stub for function code `code` (None: one with anything but plain positional
    parameters, or closing over names)."""
    if (code.co_flags & _SIMPLE_FLAGS or code.co_kwonlyargcount or code.co_posonlyargcount
            or code.co_freevars or code.co_cellvars):
        return None
    params = ", ".join(code.co_varnames[:code.co_argcount])
    text = f"def {code.co_name}({params}):\n    return {FETCH}({code.co_name!r})({params})\n"
    [made] = [c for c in compile(text, code.co_filename, "exec").co_consts
              if isinstance(c, CodeType)]
    named = {"co_name": code.co_name, "co_firstlineno": code.co_firstlineno}
    if hasattr(code, "co_qualname"):  # (Python 3.11+)
        named["co_qualname"] = code.co_qualname
    return made.replace(**named)


def stubbed(module_code: CodeType, suffixes: tuple[str, ...]) -> CodeType:
    """`module_code` with its top-level functions named ``*suffix`` as stubs (itself when
    it has none)."""
    consts = list(module_code.co_consts)
    for k, const in enumerate(consts):
        if isinstance(const, CodeType) and const.co_name.endswith(suffixes):
            consts[k] = _stub(const) or const
    if consts == list(module_code.co_consts):
        return module_code
    return module_code.replace(co_consts=tuple(consts))


def is_stub(function: Any) -> bool:
    code = getattr(function, "__code__", None)
    return isinstance(code, CodeType) and code.co_names == (FETCH,)


def fetcher(namespace: dict, full_code: Callable[[], CodeType]) -> Callable[[str], Any]:
    """The module's `FETCH`: gives function `name` of `namespace` its real code (from
    `full_code()`, the module's whole bytecode) and returns it."""
    codes: dict[str, CodeType] = {}  # (the whole bytecode read once)

    def fetch(name: str) -> Any:
        function = namespace[name]
        with _lock:
            if is_stub(function):
                if not codes:
                    codes.update((c.co_name, c) for c in full_code().co_consts
                                 if isinstance(c, CodeType))
                function.__code__ = codes[name]
        return function

    return fetch


def unstubbed(function: FunctionType) -> FunctionType:
    """`function` with its real code in place (a stub's fetched first)."""
    if is_stub(function):
        return function.__globals__[FETCH](function.__name__)
    return function
