"""What `compile` derives from an expression, kept on disk so that compiling it again skips
differentiation, scheduling, code generation and tape building.

The key is the expression's structural digest (every node carries one), the arguments, the
options, a fingerprint of symgraph's own source and a digest of the op table's contents
(`ops.table_digest`: registered ops live in no package file), so any change to symgraph or to
the table makes new records. A record holds the programs (JSON: a step is [target, op,
operands, comment], an operand a name, [name] for a negated name, or a number) and the name of
the generated module; tapes are kept beside it as .npz arrays. A program's steps are kept as
JSON text after the record's line (their sizes in it), with its census (what its op count and
cost are taken from), and read back on first use: a warm process that loads the compiled
kernels never decodes them (3,000 steps took 5-13 ms to decode, the largest cost of a warm
~1,000-operation setup), nor parses them as JSON.
Files are written atomically and each carries a digest of its key and contents (a record's
first line; a tape's `digest` array), checked before use: anything unreadable, damaged or
made for another key counts as absent and is built again, so the worst a damaged cache costs
is the work it would have saved. Saving is optional too: a full disk or a read-only folder
only loses the saving (a warning says so once). Programs longer than `MAX_RECORD_STEPS` are
not kept: writing them would cost more than it saves.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import warnings
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.node import Node
from ..ir.ops import table_digest
from ..lower.schedule import CONST, NAME, Operand, Program, Step, StepsOnUse, steps_view
from ..version import __version__
from .loading import default_cache_dir, read_text, write_atomically

if TYPE_CHECKING:
    from ..backends.tape.module import Tape

FORMAT = 5  # 2: typed operands; 3: digests; 4: steps as text, read on first use; 5: after
# the JSON (its line), not in it
MAX_RECORD_STEPS = 100_000
_TAPE_ARRAYS = ("opcodes", "operands", "targets", "blocks", "constants", "outputs", "step_of")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of symgraph's version and every module of the package (subfolders included):
    records made by other code are never read. Reading and hashing every module costs a
    fresh process 5-40 ms, so the digest is kept in the cache folder under a stamp of the
    modules' names, sizes and modification times (what CPython trusts its .pyc files by):
    any edit makes another stamp, and the digest is taken again."""
    package = Path(__file__).resolve().parent.parent
    stamp = hashlib.sha256(__version__.encode())
    try:
        for name, info in _module_stats(package):
            stamp.update(f"{name}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
        memo = default_cache_dir() / f"code-{stamp.hexdigest()[:32]}.txt"
    except OSError:
        return fingerprint_of(package)
    kept = read_text(memo)
    if kept is not None and len(kept) == 64 and all(c in "0123456789abcdef" for c in kept):
        return kept
    digest = fingerprint_of(package)
    try:
        write_atomically(memo, digest, sync=False)
    except OSError:  # only a slower next start lost
        pass
    return digest


def _module_stats(package: Path) -> list[tuple[str, os.stat_result]]:
    """(name relative to `package`, stat) of every .py file under it, sorted by name (the
    order `Path.rglob` gives, sorted, at a quarter of its cost: os.scandir's entries).
    Bytecode folders are not listed (no module is imported from them; Numba keeps the tape
    interpreter's machine code in one: 0.8 -> 0.6 ms a warm process, more beside Numba's)."""
    found, folders = [], [(package, "")]
    while folders:
        folder, prefix = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append((Path(entry.path), prefix + entry.name + "/"))
                elif entry.name.endswith(".py"):
                    found.append((prefix + entry.name, entry.stat()))
    return sorted(found, key=lambda item: item[0])


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
    if sum(p.n_steps for p in programs) > MAX_RECORD_STEPS:
        return
    # The steps' texts follow the record's line, their byte sizes in it: JSON text within
    # JSON is all escaped quotes, and parsing them was most of reading a record (1.7 ms of a
    # ~1,000-operation one) that a warm process loading its kernels never decodes.
    texts = [_steps_text(p.steps).encode() for p in programs]
    record = {"programs": [{"name": p.name, "inputs": p.inputs,
                            "steps": len(text), "n_steps": len(p.steps),
                            "census": [[*key, count] for key, count in p.census.items()],
                            "outputs": [(label, _encode(o)) for label, o in p.outputs]}
                           for p, text in zip(programs, texts)], **extra}
    body = json.dumps(record, separators=(",", ":")).encode() + b"\n" + b"".join(texts)
    _save(folder / f"expr_{key}.json", _digest(key, body).encode() + b"\n" + body)


def load_programs(folder: Path, key: str) -> tuple[list[Program], dict] | None:
    """The programs kept under `key` and the record's other entries, or None (also when the
    record is damaged, made for another key, or not what `save_programs` writes)."""
    try:
        digest, _, body = (folder / f"expr_{key}.json").read_bytes().partition(b"\n")
        if digest.decode("ascii") != _digest(key, body):
            return None
        head, _, texts = body.partition(b"\n")  # (json.dumps writes no line break)
        record = json.loads(head)
        decode, programs, start = _Decoder(), [], 0
        for p in record.pop("programs"):
            size = p["steps"]
            if type(size) is not int or not 0 <= size <= len(texts) - start:
                raise ValueError("not a record's steps")
            programs.append(KeptProgram.of(p, decode, texts[start:start + size]))
            start += size
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
    if not programs or not isinstance(record, dict):
        return None
    return programs, record


def _digest(key: str, data: bytes) -> str:
    return hashlib.sha256(key.encode() + b"\0" + data).hexdigest()


def _text(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"not a name: {value!r}")
    return value


_unsaved: set[tuple[Path, int | None]] = set()  # (folder, errno) already warned of


def _save(path: Path, data: bytes) -> None:
    """Keep `data` at `path` if the disk allows: a record only saves work, so a full disk or a
    read-only folder costs the saving, never the call (a warning says so once)."""
    try:
        write_atomically(path, data, sync=False)  # (read back only if its digest checks)
    except OSError as error:
        if (path.parent, error.errno) not in _unsaved:
            _unsaved.add((path.parent, error.errno))
            warnings.warn(f"symgraph: could not keep {path.name} in {path.parent} "
                          f"({error.strerror or error}); it is built again next time",
                          RuntimeWarning, stacklevel=4)


def _encode(operand: Operand) -> str | list[str] | float:
    if operand.kind == CONST:
        return operand.value  # JSON numbers, NaN and Infinity included, read back exactly
    return [operand.value] if operand.negated else operand.value


def _steps_text(steps: Sequence[Step]) -> str:
    return json.dumps([(s.target, s.op, [_encode(o) for o in s.operands], s.comment)
                       for s in steps], separators=(",", ":"))


class KeptProgram(StepsOnUse):
    """A Program read back from a record: its name, inputs, outputs and census at once, its
    steps decoded from the record's text on first use (`Program` in every other respect: it
    compares, hashes and pickles as the Program it was saved from)."""

    @classmethod
    def of(cls, data: dict, decode: _Decoder, text: bytes) -> KeptProgram:
        """From a record's entry and its steps' JSON text (a TypeError, KeyError or
        ValueError if they are not those)."""
        n_steps = data["n_steps"]
        if type(text) is not bytes or type(n_steps) is not int:
            raise TypeError("not a record's program")
        census: dict[tuple[str, int, int | None], int] = {}
        for op, n, k, count in data["census"]:
            if (type(op) is not str or type(n) is not int or type(count) is not int
                    or not (k is None or type(k) is int)):
                raise TypeError(f"not a census entry: {[op, n, k, count]!r}")
            census[(op, n, k)] = count
        if sum(census.values()) != n_steps:
            raise ValueError("the census does not count the steps")
        program = object.__new__(cls)
        vars(program).update(
            name=_text(data["name"]), inputs=tuple(map(_text, data["inputs"])),
            outputs=tuple((_text(label), decode(operand)) for label, operand in data["outputs"]),
            census=census, _text=text, _n_steps=n_steps, _decode=decode)
        return program

    @cached_property
    def steps(self) -> tuple[Step, ...]:  # type: ignore[override]
        """The steps, decoded from the record's text (checked as at reading: a record whose
        digest matched but whose steps do not decode is refused with a ValueError)."""
        try:  # (the text is kept: a thread that asks while another decodes decodes it too)
            steps = _steps(json.loads(self._text), self._decode)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
            raise ValueError(f"damaged steps of the kept program {self.name!r}") from error
        if len(steps) != self._n_steps:
            raise ValueError(f"damaged steps of the kept program {self.name!r}")
        return steps

    @property
    def n_steps(self) -> int:
        return self._n_steps  # (the decoded steps are checked to be as many)


def _steps(data: list, decode: _Decoder) -> tuple[Step, ...]:
    """The steps of a record (a TypeError for anything but [target, op, operands, comment]
    with names as text): made as plain tuples of Step's fields, Step's own constructor
    being most of a 3,000-step record's reading."""
    make, steps = tuple.__new__, []
    for target, op, operands, note in data:
        if type(target) is not str or type(op) is not str or type(note) is not str:
            raise TypeError(f"not a step: {[target, op, operands, note]!r}")
        steps.append(make(Step, (target, op, tuple(map(decode, operands)), note)))
    return tuple(steps)


class _Decoder(dict):
    """`_decode` with each name's operand made once (a name is read as often as it is used:
    a 3,000-step record decodes in a third of the time)."""

    def __call__(self, data: str | list[str] | float) -> Operand:
        if type(data) is str:
            operand = self.get(data)
            if operand is None:
                operand = self[data] = Operand(NAME, data)
            return operand
        return _decode(data)


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
    arrays["digest"] = np.frombuffer(_tape_digest(key, tape.name, arrays), np.uint8)
    data = io.BytesIO()
    np.savez(data, **arrays)
    _save(_tape_path(folder, key, tape.name), data.getvalue())


def _tape_digest(key: str, name: str, arrays: dict[str, np.ndarray]) -> bytes:
    digest = hashlib.sha256(f"{key}\0{name}".encode())
    for label in (*_TAPE_ARRAYS, "n_registers"):
        array = arrays[label]
        digest.update(f"\0{label}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()


def load_tape(folder: Path, key: str, program: Program) -> Tape | None:
    """The tape of `program` kept under `key`, or None (also when the file is damaged, made
    for another key or program, or its arrays do not make a tape the interpreter can run)."""
    try:
        with np.load(_tape_path(folder, key, program.name), allow_pickle=False) as data:
            arrays = {name: data[name] for name in (*_TAPE_ARRAYS, "n_registers", "digest")}
        if arrays.pop("digest").tobytes() != _tape_digest(key, program.name, arrays):
            return None
        n_registers = int(arrays.pop("n_registers"))
    except Exception:  # noqa: BLE001 - whatever a damaged file raises (zip, CRC, EOF, ...)
        return None
    from ..backends.tape.module import Tape  # imports the interpreter: only when a tape is wanted

    try:  # (the tape checks its arrays' shapes and bounds)
        return Tape(program.name, tuple(program.inputs),
                    tuple(label for label, _ in program.outputs), n_registers,
                    steps=steps_view(program), **arrays)
    except ValueError:
        return None
