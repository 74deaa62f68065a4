"""What `compile` derives from an expression, kept on disk so that compiling it again skips
differentiation, scheduling, code generation and tape building.

The key is the expression's structural digest (every node carries one), the arguments, the
options, a fingerprint of symgraph's own source and a digest of the op table's contents
(`ops.table_digest`: registered ops live in no package file), so any change to symgraph or to
the table makes new records. A record holds the programs (JSON: a step is [target, op,
operands, comment], an operand a name, [name] for a negated name, or a number) and the name of
the generated module; tapes are kept beside it as .npz arrays. Files are written atomically and
anything unreadable counts as absent, so the worst a damaged cache costs is the work it would
have saved. Programs longer than `MAX_RECORD_STEPS` are not kept: writing them would cost more
than it saves.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.node import Node
from ..ir.ops import table_digest
from ..lower.schedule import CONST, NAME, Operand, Program, Step
from ..version import __version__
from .loading import write_atomically

if TYPE_CHECKING:
    from ..backends.tape.module import Tape

FORMAT = 2  # 2: typed operands
MAX_RECORD_STEPS = 100_000
_TAPE_ARRAYS = ("opcodes", "operands", "targets", "blocks", "constants", "outputs", "step_of")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of symgraph's version and every module of the package (subfolders included):
    records made by other code are never read."""
    return fingerprint_of(Path(__file__).resolve().parent.parent)


def fingerprint_of(package: Path) -> str:
    """The digest `code_fingerprint` takes, of the package in folder `package`."""
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def expression_key(outputs: Sequence[Node], args: Sequence[Node], wrt: Sequence[Node],
                   **options: Any) -> str:
    # The op table's digest too: registered ops are not in the package's files.
    digest = hashlib.sha256(f"{FORMAT}\0{code_fingerprint()}\0{table_digest()}\0".encode())
    digest.update(json.dumps(options, sort_keys=True).encode())
    for group in (outputs, args, wrt):
        digest.update(b"\1" + b"".join(node.digest for node in group))
    return digest.hexdigest()[:32]


def save_programs(folder: Path, key: str, programs: Sequence[Program], **extra: Any) -> None:
    """Keep `programs` (and `extra`, JSON values) under `key`, unless they are too long."""
    if sum(len(p.steps) for p in programs) > MAX_RECORD_STEPS:
        return
    record = {"programs": [{"name": p.name, "inputs": p.inputs,
                            "steps": [(s.target, s.op, [_encode(o) for o in s.operands],
                                       s.comment) for s in p.steps],
                            "outputs": [(label, _encode(o)) for label, o in p.outputs]}
                           for p in programs], **extra}
    write_atomically(folder / f"expr_{key}.json", json.dumps(record, separators=(",", ":")))


def load_programs(folder: Path, key: str) -> tuple[list[Program], dict] | None:
    """The programs kept under `key` and the record's other entries, or None."""
    try:
        record = json.loads((folder / f"expr_{key}.json").read_bytes())
        programs = [Program(p["name"], tuple(p["inputs"]),
                            tuple(Step(t, op, tuple(map(_decode, operands)), note)
                                  for t, op, operands, note in p["steps"]),
                            tuple((label, _decode(operand)) for label, operand in p["outputs"]))
                    for p in record.pop("programs")]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return programs, record


def _encode(operand: Operand) -> str | list[str] | float:
    if operand.kind == CONST:
        return operand.value  # JSON numbers, NaN and Infinity included, read back exactly
    return [operand.value] if operand.negated else operand.value


def _decode(data: str | list[str] | float) -> Operand:
    if type(data) is str:
        return Operand(NAME, data)
    if type(data) is list:
        (name,) = data
        if type(name) is not str:
            raise TypeError(f"not an operand: {data!r}")
        return Operand(NAME, name, True)
    if type(data) in (float, int):  # (not bool: its type is bool)
        return Operand(CONST, float(data))
    raise TypeError(f"not an operand: {data!r}")


def _tape_path(folder: Path, key: str, name: str) -> Path:
    return folder / f"tape_{key}_{name}.npz"


def save_tape(folder: Path, key: str, tape: Tape) -> None:
    if len(tape.steps) > MAX_RECORD_STEPS:
        return
    arrays = {name: getattr(tape, name) for name in _TAPE_ARRAYS}
    arrays["n_registers"] = np.array(tape.n_registers)
    data = io.BytesIO()
    np.savez(data, **arrays)
    write_atomically(_tape_path(folder, key, tape.name), data.getvalue())


def load_tape(folder: Path, key: str, program: Program) -> Tape | None:
    """The tape of `program` kept under `key`, or None."""
    try:
        with np.load(_tape_path(folder, key, program.name)) as data:
            arrays = {name: data[name] for name in _TAPE_ARRAYS}
            n_registers = int(data["n_registers"])
    except (OSError, ValueError, KeyError):
        return None
    from ..backends.tape.module import Tape  # imports the interpreter: only when a tape is wanted

    return Tape(program.name, tuple(program.inputs),
                tuple(label for label, _ in program.outputs), n_registers, steps=program.steps,
                **arrays)
