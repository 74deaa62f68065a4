"""The tape interpreter: Numba functions that run every tape of an op table, compiled once and
cached.

A tape is a flat list of instructions ``regs[target] = op(regs[a], regs[b], regs[c])`` over one
register file laid out as ``[inputs | constants | work registers]`` (see
`symgraph.backends.tape.builder`). The interpreter's machine code does not depend on the
expression, so it is compiled once per machine (``cache=True``) and a 10^6-instruction tape
costs no compile time at all.

Instructions run in *blocks*, runs of one op (`symgraph.backends.tape.passes.split_blocks`), so
an op is decoded once per block. Each op is computed with exactly the expression of its Numba
template in the op table (``OPS[name].nb`` on operands ``a, b, c``). The vector ops (the
one-operand ops with a ``lanes`` template: exp, expm1, log, log1p, sin, cos, tanh, erf, sigmoid;
and `sincos`, the sin and cos of one operand from one argument reduction) use
`symgraph.backends.numba.vecmath` instead of libm, one SIMD loop per block: within an ulp of
the true value like libm, so they may differ from the straight-line kernels in the last bit.
Flags are the straight-line kernels' (``error_model="numpy"``, no fastmath), so edge points give
NumPy's answers (1/0 = inf, log(-1) = nan) and never raise.

The interpreter is generated from the op table (`symgraph.backends.tape.generate`; codes from
`symgraph.backends.tape.opcodes`: the tape-only instructions first, then the table in table
order, so an op registered later appends a code). Two homes:

* the op table as shipped: `standard.py` in this folder, generated and checked in. It records
  the digest of the instruction set it was made from (`TABLE`): a table whose instruction set
  has that digest uses it, with no source rendered on the way. Numba keeps its machine code in
  the package's ``__pycache__`` (~10 s to compile, once per machine, Numba and symgraph
  version: `symgraph precompile`). Its name never changes, so its cached machine code is
  dropped when vecmath (or a module beside vecmath that it imports), which it inlines, changes.
* any other table (an op registered at run time, ``OPS[name] = OpSpec(...)``; or the shipped
  table before `standard.py` is regenerated): ``tape_interpreter_<digest>.py`` in the cache
  folder (``$SYMGRAPH_CACHE_DIR/tape``), written atomically and named by a digest of its source
  and of vecmath, so a change of either makes a new file and nothing goes stale. Its first tape
  call compiles it, as long as the standard one takes (~10 s on an idle machine; the test that
  registers two ops took 16 s of CPU, 46 s of wall time on a loaded one); later processes load
  it from Numba's cache.

`interpreter_for(ops)` is a table's `Interpreter`; `run_row`, `run_batch`, ... below are those
of the table as it was when this module was imported (for `symgraph precompile` and tests).
`symgraph.backends.tape.module` wraps the kernels as `Tape` and `TapeModule` objects.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ...ir.ops import OPS
from ..files import default_cache_dir, read_text, write_atomically
from ..imports import import_file
from ..numba import vecmath
from ..numba.cache import dispatchers_of, drop_if_changed, inlined_files
from ..numba.cache_files import checked, folders_checked_once, place_cache
from .opcodes import InstructionSet, instruction_set

VECMATH_NAMES = vecmath.NAMES
ENTRY_POINTS = ("run", "run_row", "run_lanes", "run_batch", "run_points")  # cache=True ones


class Interpreter:
    """One op table's interpreter: its instruction set (`names`, `codes`, `arities`, `vector`,
    from the generated module) and its kernels (`run_row`, `run_batch`, `run_points`, ...)."""

    def __init__(self, module: ModuleType, standard: bool) -> None:
        self.module, self.standard = module, standard
        checked(dispatchers_of(module))  # `run` and the helpers the entry points compile with
        self.table: str = module.TABLE  # the digest of its instruction set
        self.names: tuple[str, ...] = tuple(module.INSTRUCTION_NAMES)
        self.arities: tuple[int, ...] = tuple(module.ARITIES)
        self.codes = {name: code for code, name in enumerate(self.names)}
        self.vector: np.ndarray = module._IS_VECTOR.copy()  # per code: runs with vecmath
        self.max_block: int = module.MAX_BLOCK
        # per code: the slot of an immediate instruction's constant (-1: none)
        self.immediate: np.ndarray = module._IMMEDIATE_SLOT.copy()
        for name in ENTRY_POINTS:
            setattr(self, name, getattr(module, name))

    @property
    def source(self) -> str:
        return Path(self.module.__file__).read_text(encoding="utf-8")

    def __reduce__(self):
        # Workers (Dask) rebuild it from its source: they need not have registered its ops.
        return (_restore, (self.table, None if self.standard else self.source))

    def __repr__(self) -> str:
        where = "standard" if self.standard else self.module.__file__
        return f"<tape Interpreter of {len(self.names)} instructions: {where}>"


def interpreter_for(ops: Mapping[str, Any] | None = None) -> Interpreter:
    """The interpreter of the op table `ops` (default: `OPS` as it is now)."""
    ops = OPS if ops is None else ops
    key = tuple((name, id(spec)) for name, spec in ops.items())
    found = _by_table.get(key)
    if found is None:
        # The table's specs stay referenced beside their ids, so no id is reused meanwhile.
        found = _by_table[key] = (_of(instruction_set(ops, VECMATH_NAMES)), tuple(ops.values()))
    return found[0]


def refusal(name: str, ops: Mapping[str, Any] | None = None) -> str | None:
    """Why the interpreter of `ops` has no instruction for op `name` (None if it has one)."""
    return instruction_set(OPS if ops is None else ops, VECMATH_NAMES).refused.get(name)


_by_table: dict[tuple, tuple[Interpreter, tuple]] = {}
_by_digest: dict[str, Interpreter] = {}  # by `TABLE`, the digest of the instruction set


def _of(instructions: InstructionSet) -> Interpreter:
    """The interpreter of `instructions`: the shipped one when it was generated from the same
    instruction set (its `TABLE`; no source is rendered then), else one generated now."""
    found = _by_digest.get(instructions.digest())
    if found is not None:
        return found
    standard = _standard()
    if standard is not None and standard.table == instructions.digest():
        return standard
    from .generate import interpreter_source

    return _generated(interpreter_source(instructions, VECMATH_NAMES))


def _standard() -> Interpreter | None:
    place_cache()  # before its cache=True functions are defined
    try:
        with folders_checked_once():
            module = importlib.import_module(".standard", __package__)
    except Exception:  # noqa: BLE001 - missing or broken: tapes run on a generated copy
        return None
    if not isinstance(getattr(module, "TABLE", None), str):
        return None  # written by an older generator
    found = _by_digest.get(module.TABLE)
    if found is None:
        # Numba's cache checks only that file; its machine code also holds vecmath's functions.
        checked(dispatchers_of(module))  # before anything reads its cache files
        drop_if_changed([getattr(module, name) for name in ENTRY_POINTS], inlined_files())
        found = _by_digest[module.TABLE] = Interpreter(module, standard=True)
    return found if found.standard else None


def _generated(source: str) -> Interpreter:
    module = _generated_module(source)
    found = _by_digest.get(module.TABLE)
    if found is None:
        found = _by_digest[module.TABLE] = Interpreter(module, standard=False)
    return found


def _restore(table: str, source: str | None) -> Interpreter:
    found = _by_digest.get(table) or (_standard() if source is None else _generated(source))
    if found is None or found.table != table:
        raise RuntimeError("this tape was built for another symgraph's standard interpreter")
    return found


def _generated_module(source: str) -> ModuleType:
    """Import `source` from ``tape_interpreter_<digest>.py`` in the cache folder."""
    import hashlib

    digest = hashlib.sha256(source.encode())
    for path in inlined_files():
        digest.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
    name = f"symgraph_tape_interpreter_{digest.hexdigest()[:24]}"
    path = default_cache_dir() / "tape" / f"{name.removeprefix('symgraph_')}.py"
    if read_text(path) != source:  # missing or damaged (truncated, edited, a folder): anew
        write_atomically(path, source)
    return import_file(name, path, source)


_current = interpreter_for()
run, run_row, run_lanes, run_batch, run_points = (
    _current.run, _current.run_row, _current.run_lanes, _current.run_batch, _current.run_points)
MAX_BLOCK = _current.max_block
