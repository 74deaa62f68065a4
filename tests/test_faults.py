"""Fault injection: every kind of file symgraph keeps in its cache folder (generated modules,
their bytecode, records, tapes, Numba's index and machine code, the tape interpreter's) is
truncated, emptied, bit-flipped, replaced with garbage, a folder, or valid contents of the
wrong kind, and the NEXT process must give the right numbers and leave the files repaired.
Then the environments: the cache folder deleted mid-use, read-only folders and installs, a
second user, a full disk, `-o` onto links, FIFOs, devices and read-only files, and
processes sharing one folder.

Subprocesses cost Numba's import each, so the faults are batched: one process makes every
case's files, the test damages them (one fault per case), one more process computes every
case again (`faulted`). The oracle is the gradient worked out by hand.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# Each case is its own expression: f = x**3 + k*x*y, so grad f at (2, 3) is (12 + 3k, 2k).
CHILD = r"""
import json, os, shutil, sys, warnings
import numpy as np
import symgraph as sg
from symgraph.backends.numba.cache import dispatchers_of

cases, deleted = json.loads(sys.argv[1]), json.loads(sys.argv[2])
numba_faults = {n for n, (_, backend, strategy) in cases.items()
                if backend == "numba" and strategy == "straight"}
warnings.simplefilter("always")
out = {}


def run(f, k, batch=True):
    grad = f.grad(2.0, 3.0)
    if not batch:  # (one kernel to compile: the point kernel, which floats go to)
        return {"grad": grad.tolist()}
    _, batch = f.value_and_grad(np.full(3, 2.0), np.full(3, 3.0))
    return {"grad": grad.tolist(), "batch": batch.tolist()}


def numba_files(f):
    return [d._cache._cache_file._index_path for d in dispatchers_of(f.module)
            if getattr(d, "_cache", None) is not None and hasattr(d._cache, "_cache_file")]


for name, (k, backend, strategy) in cases.items():
    folder = os.environ["SYMGRAPH_CACHE_DIR"]
    before = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    try:
        f = sg.compile(f"x**3 + {k}*x*y", ["x", "y"], backend=backend, strategy=strategy)
        result = run(f, k, batch=name not in numba_faults)
    except Exception as error:
        out[name] = {"error": f"{type(error).__name__}: {error}"}
        continue
    result["new"] = sorted(set(os.listdir(folder)) - before)
    result["path"] = str(f.path) if f.path else None
    result["numba"] = numba_files(f) if backend == "numba" and strategy == "straight" else []
    out[name] = result
from symgraph.backends.tape import passes
out["passes"] = passes.split_blocks._cache._cache_file._index_path  # the tape builder's

# The cache folder deleted between compile and first call (Numba's files too when they live
# inside it): the kernels still compile and run.
for name, (k, backend, strategy) in deleted.items():
    folder = os.path.join(os.environ["SYMGRAPH_CACHE_DIR"], "deleted-" + name)
    try:
        f = sg.compile(f"x**3 + {k}*x*y", ["x", "y"], backend=backend, strategy=strategy,
                       cache_dir=folder)
        shutil.rmtree(folder)
        out[name] = run(f, k)
    except Exception as error:
        out[name] = {"error": f"{type(error).__name__}: {error}"}
print(json.dumps(out))
"""


def _child(cases: dict, deleted: dict | None = None, env: dict | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases),
                           json.dumps(deleted or {})],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _expected(k: int) -> list[float]:
    return [12.0 + 3 * k, 2.0 * k]


def _right(result: dict, k: int) -> bool:
    return ("error" not in result and np.allclose(result["grad"], _expected(k), rtol=1e-14)
            and np.allclose(result.get("batch", [_expected(k)]), [_expected(k)] * 3, rtol=1e-14))


# -- the faults --------------------------------------------------------------------------


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) * 2 // 3] ^= 0x10
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _folder(path: Path) -> None:
    path.unlink()
    (path / "inside").mkdir(parents=True)


def _edit_module(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    edited = text.replace("3.0 * ", "4.0 * ")
    assert edited != text, "the edit must change the module's math"
    path.write_text(edited, encoding="utf-8")


def _re_signed(path: Path, change) -> None:
    """A record whose line is valid JSON, changed by `change`, with a digest that matches:
    only the record's own checks can refuse it. (Its programs' steps follow that line.)"""
    from symgraph.runtime import expression_cache

    key = path.stem[len("expr_"):]
    _, _, body = path.read_bytes().partition(b"\n")
    head, _, steps = body.partition(b"\n")
    record = json.loads(head)
    change(record)
    body = json.dumps(record).encode() + b"\n" + steps
    path.write_bytes(expression_cache._digest(key, body).encode() + b"\n" + body)


def _tape_out_of_range(path: Path) -> None:
    """Operands far outside the register file, the file's digest made to match: only the
    tape's bounds check stands between them and the interpreter."""
    from symgraph.runtime import expression_cache

    key, name = path.stem[len("tape_"):].split("_", 1)
    with np.load(path) as data:
        arrays = {label: data[label] for label in data.files if label != "digest"}
    arrays["operands"] = arrays["operands"] + np.int32(1 << 20)
    arrays["digest"] = np.frombuffer(expression_cache._tape_digest(key, name, arrays), np.uint8)
    np.savez(path, **arrays)


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00\xff garbage \x80" * 7)


MODULE_FAULTS = {
    "module_edited": _edit_module,
    "module_truncated": _truncate,
    "module_empty": lambda p: p.write_bytes(b""),
    "module_not_utf8": lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()),
    "module_flipped": _flip,
    "module_folder": _folder,
    "module_deleted": Path.unlink,
}
BYTECODE_FAULTS = {"bytecode_truncated": _truncate, "bytecode_flipped": _flip,
                   "bytecode_garbage": _garbage}
RECORD_FAULTS = {
    "record_truncated": _truncate,
    "record_empty": lambda p: p.write_bytes(b""),
    "record_flipped": _flip,
    "record_garbage": _garbage,
    "record_folder": _folder,
    "record_no_programs": lambda p: _re_signed(p, lambda r: r.update(programs=[])),
    "record_unknown_strategy": lambda p: _re_signed(p, lambda r: r.update(strategy="x")),
    "record_deleted": Path.unlink,
}
TAPE_FAULTS = {
    "tape_truncated": _truncate,
    "tape_empty": lambda p: p.write_bytes(b""),
    "tape_flipped": _flip,
    "tape_garbage": _garbage,
    "tape_folder": _folder,
    "tape_out_of_range": _tape_out_of_range,
}
NUMBA_FAULTS = {  # on the point kernel's index (.nbi) or its machine code (.nbc)
    "nbi_truncated": ("nbi", _truncate), "nbi_empty": ("nbi", lambda p: p.write_bytes(b"")),
    "nbi_flipped": ("nbi", _flip), "nbc_truncated": ("nbc", _truncate),
    "nbc_flipped": ("nbc", _flip), "nbc_garbage": ("nbc", _garbage),
    "nbi_folder": ("nbi", _folder),
    "nbc_of_another_kernel": ("nbc", None),  # (another case's valid machine code copied in)
}
# Cases whose record, module or tapes are another expression's (valid, but not theirs).
COPIED = ("record_of_another_expression", "module_of_another_expression",
          "tapes_of_another_expression")


def _cases() -> dict[str, tuple[int, str, str]]:
    names = [*MODULE_FAULTS, *BYTECODE_FAULTS, *RECORD_FAULTS, *COPIED[:2]]
    cases = {name: (k, "python", "straight") for k, name in enumerate(names, 1)}
    base = len(cases)
    for k, name in enumerate([*TAPE_FAULTS, COPIED[2]], base + 1):
        cases[name] = (k, "numba", "tape")
    base = len(cases)
    for k, name in enumerate(NUMBA_FAULTS, base + 1):
        cases[name] = (k, "numba", "straight")
    return cases


DELETED = {"deleted_python": (101, "python", "straight"),
           "deleted_numba": (102, "numba", "straight"), "deleted_tape": (103, "numba", "tape")}


def _only(new: list[str], prefix: str, suffix: str) -> str:
    (name,) = [n for n in new if n.startswith(prefix) and n.endswith(suffix)]
    return name


@pytest.fixture(scope="module")
def faulted(tmp_path_factory) -> dict:
    """Every case made by one process, damaged one fault each, computed again by another."""
    folder = tmp_path_factory.mktemp("faults")
    env = {"SYMGRAPH_CACHE_DIR": str(folder)}
    cases = _cases()
    first = _child(cases, DELETED, env)
    for name, (k, _, _) in cases.items():
        assert _right(first[name], k), (name, first[name])
    unapplied = {}  # case -> why its fault could not be made (the case then fails)

    def damage(name: str, fault, where, *more) -> None:
        try:
            found = where(name, *more)
            for path in found if isinstance(found, list) else [found]:
                fault(path)
        except Exception as error:  # noqa: BLE001 - (reported by the case's test)
            unapplied[name] = f"{type(error).__name__}: {error}"

    def module(name: str) -> Path:
        return Path(first[name]["path"])

    def record(name: str) -> Path:
        return folder / _only(first[name]["new"], "expr_", ".json")

    def bytecode(name: str) -> Path:
        (kept,) = (folder / "__pycache__").glob(module(name).stem + ".*.sgc")
        return kept

    def tapes(name: str) -> list[Path]:
        found = [folder / n for n in first[name]["new"] if n.startswith("tape_")]
        assert found, "no tape kept"
        return found

    def machine_code(name: str, kind: str) -> list[Path]:
        indexes = [Path(p) for p in first[name]["numba"]  # the one-point call's kernel
                   if "_point-" in p and Path(p).is_file()]
        found = indexes if kind == "nbi" else [
            data for index in indexes for data in index.parent.glob(index.stem + ".*.nbc")]
        assert found, "no cache file"
        return found

    for name, fault in MODULE_FAULTS.items():
        damage(name, fault, module)
    for name, fault in BYTECODE_FAULTS.items():
        damage(name, fault, bytecode)
    for name, fault in RECORD_FAULTS.items():
        damage(name, fault, record)
    # Valid files of another expression in their place.
    damage(COPIED[0], functools.partial(shutil.copyfile, record("module_edited")), record)
    damage(COPIED[1], functools.partial(shutil.copyfile, module("module_edited")), module)
    def program(path: Path) -> str:  # tape_<key>_<program>.npz
        return path.name.split("_", 2)[2]

    theirs = {program(path): path.read_bytes() for path in tapes("tape_truncated")}

    def copy_tape(path: Path) -> None:
        path.write_bytes(theirs[program(path)])

    damage(COPIED[2], copy_tape, tapes)
    for name, fault in TAPE_FAULTS.items():
        damage(name, fault, tapes)
    other_code = machine_code("nbi_truncated", "nbc")[0].read_bytes()  # (before its damage)
    for name, (kind, fault) in NUMBA_FAULTS.items():
        damage(name, fault or (lambda path: path.write_bytes(other_code)), machine_code, kind)
    # A package-level cached function's index too (the tape builder's pass, which the damaged
    # tapes above run again): the same path the tape interpreter's own files take.
    damage("tape_truncated", _truncate, lambda name: Path(first["passes"]))
    second = _child(cases, env=env)
    return {"folder": folder, "cases": cases, "first": first, "second": second,
            "unapplied": unapplied}


def _check(faulted: dict, names) -> None:
    assert not set(names) & set(faulted["unapplied"]), faulted["unapplied"]
    wrong = {n: faulted["second"][n] for n in names
             if not _right(faulted["second"][n], faulted["cases"][n][0])}
    assert not wrong, wrong


def test_an_edited_or_bit_flipped_generated_module_is_rebuilt_not_trusted(faulted):
    _check(faulted, ["module_edited", "module_flipped", COPIED[1]])
    from symgraph.runtime.loading import kept_source

    for name in ("module_edited", "module_flipped", COPIED[1]):  # repaired on disk too
        path = Path(faulted["second"][name]["path"])
        assert kept_source(path.parent, path.name) is not None, name


def test_truncated_empty_non_utf8_folder_or_missing_modules_are_written_again(faulted):
    _check(faulted, MODULE_FAULTS)
    for name in MODULE_FAULTS:
        assert Path(faulted["second"][name]["path"]).is_file()


def test_damaged_bytecode_of_a_generated_module_is_compiled_again(faulted):
    _check(faulted, BYTECODE_FAULTS)


def test_damaged_malformed_or_foreign_records_are_rebuilt_and_replaced(faulted):
    from symgraph.runtime import expression_cache

    _check(faulted, [*RECORD_FAULTS, COPIED[0]])
    for name in (*RECORD_FAULTS, COPIED[0]):
        record = faulted["folder"] / _only(faulted["first"][name]["new"], "expr_", ".json")
        assert expression_cache.load_programs(record.parent, record.stem[5:]) is not None, name


def test_damaged_tapes_and_tapes_with_out_of_range_operands_are_rebuilt_never_run(faulted):
    _check(faulted, [*TAPE_FAULTS, COPIED[2]])


def test_damaged_numba_index_or_machine_code_compiles_again(faulted):
    _check(faulted, NUMBA_FAULTS)
    for name in NUMBA_FAULTS:  # and is saved again: the process after needs no compile
        assert all(Path(p).is_file() for p in faulted["second"][name]["numba"]
                   if "value_grad_point" in p), name


def test_deleting_the_cache_folder_between_compile_and_first_call_works(faulted):
    wrong = {n: faulted["first"][n] for n, (k, _, _) in DELETED.items()
             if not _right(faulted["first"][n], k)}
    assert not wrong, wrong


def test_the_tape_interpreters_damaged_cache_files_read_as_absent_never_as_an_error(tmp_path):
    import copy

    from symgraph.backends.numba.cache import dispatchers_of
    from symgraph.backends.tape import passes
    from symgraph.backends.tape.interpreter import interpreter_for

    dispatchers = [d for d in dispatchers_of(interpreter_for().module) + dispatchers_of(passes)
                   if hasattr(d._cache, "_cache_file")]  # (not the inlined helpers)
    assert len(dispatchers) >= 10
    for dispatcher in dispatchers:
        cache_file = copy.copy(dispatcher._cache._cache_file)
        assert dispatcher._cache._symgraph_checked and cache_file._version.endswith("crc32")
        cache_file._index_path = str(tmp_path / "index.nbi")  # a copy: the real one stays
        cache_file._save_index({"key": "data"})
        assert cache_file._load_index() == {"key": "data"}
        for fault in (_truncate, _flip, _garbage, lambda p: p.write_bytes(b"")):
            cache_file._save_index({"key": "data"})
            fault(tmp_path / "index.nbi")
            assert cache_file._load_index() == {}


def test_a_tape_with_indices_outside_its_registers_is_refused_before_it_runs():
    from dataclasses import replace

    import symgraph as sg
    from symgraph.backends.tape.builder import build_tape
    from symgraph.lower.programs import build_programs

    x, y = sg.symbols("x y")
    *_, program = build_programs([sg.sin(x) * y**3 + sg.exp(y)], [x, y], [x, y], True, False)
    tape = build_tape(program)
    n, vector = tape.n_registers, np.flatnonzero(tape.interpreter.vector)[0]
    long_block = np.full(tape.interpreter.max_block + 1, vector, np.int32)
    bad = {
        "operands": dict(operands=tape.operands + np.int32(n)),
        "negative target": dict(targets=tape.targets - np.int32(n + 1)),
        "opcode": dict(opcodes=tape.opcodes + np.int32(len(tape.interpreter.names))),
        "output": dict(outputs=tape.outputs + np.int32(n)),
        "blocks": dict(blocks=tape.blocks[:-1]),
        "dtype": dict(operands=tape.operands.astype(np.int64)),
        "registers": dict(n_registers=1),
        "vector block": dict(opcodes=long_block, operands=np.zeros((len(long_block), 3), np.int32),
                             targets=np.zeros(len(long_block), np.int32),
                             step_of=np.zeros(len(long_block), np.int32),
                             blocks=np.array([0, len(long_block)], np.int32)),
    }
    for change in bad.values():
        with pytest.raises(ValueError, match="cannot run"):
            replace(tape, **change)
    assert replace(tape).n_registers == n  # an unchanged copy is accepted


def test_files_reach_the_disk_before_they_are_renamed_into_place(tmp_path, monkeypatch):
    from symgraph.backends import files

    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(
        ("fsync", stat.S_ISDIR(os.fstat(fd).st_mode))), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append(("replace", None)),
                                                     real_replace(a, b))[1])
    files.write_atomically(tmp_path / "record.json", "{}")
    assert events == [("fsync", False), ("replace", None), ("fsync", True)]
    assert (tmp_path / "record.json").read_text() == "{}"


def test_cache_files_and_outputs_get_the_modes_the_umask_gives(tmp_path):
    from symgraph.backends import files
    from symgraph.cli.main import main

    old = os.umask(0o002)
    try:
        files.write_atomically(tmp_path / "shared.py", "x = 1\n")
        assert main(["codegen", "x**2", "--backend", "python", "-o",
                     str(tmp_path / "out.py")]) == 0
    finally:
        os.umask(old)
    for name in ("shared.py", "out.py"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o664, name


def test_o_follows_links_writes_through_fifos_and_devices_and_refuses_read_only_files(
        tmp_path, capsys):
    from symgraph.cli.main import main

    def codegen(target) -> int:
        return main(["codegen", "x**2", "--backend", "python", "-o", str(target)])

    real, link = tmp_path / "real.py", tmp_path / "link.py"
    real.write_text("old\n")
    real.chmod(0o640)
    link.symlink_to(real.name)
    assert codegen(link) == 0
    assert link.is_symlink() and "def value" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the file's own modes kept

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert codegen(fifo) == 0
    reader.join(30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and "def value" in got[0]

    null = os.stat(os.devnull)
    assert codegen(os.devnull) == 0
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == null.st_ino  # never replaced

    read_only = tmp_path / "read_only.py"
    read_only.write_text("keep\n")
    read_only.chmod(0o444)
    capsys.readouterr()
    assert codegen(read_only) == 1
    assert "read-only" in capsys.readouterr().err
    assert read_only.read_text() == "keep\n"


def test_an_unwritable_cache_folder_falls_back_to_a_private_temporary_folder(
        tmp_path, monkeypatch):
    import tempfile

    import symgraph as sg

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    blocked = tmp_path / "a_file"
    blocked.write_text("")  # a cache folder below a file can never be made, even by root
    with pytest.warns(RuntimeWarning, match="cannot use the cache folder"):
        f = sg.compile("x**3 + x*y", ["x", "y"], backend="python",
                       cache_dir=blocked / "cache")
    assert f.grad(2.0, 3.0).tolist() == [15.0, 2.0]
    assert Path(f.path).parent.parent == tmp_path / "tmp"
    assert stat.S_IMODE(Path(f.path).parent.stat().st_mode) == 0o700


def _restricted() -> tuple:
    """A prefix that runs a command without root's power to write anywhere (as root:
    setpriv drops the capabilities that bypass file modes); () when not root."""
    if not IS_ROOT:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: a read-only folder is writable")
    return ("setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner")


def test_a_read_only_install_without_a_writable_home_compiles_in_a_temporary_folder(tmp_path):
    prefix = _restricted()
    install = tmp_path / "install"
    shutil.copytree(ROOT / "symgraph", install / "symgraph",
                    ignore=shutil.ignore_patterns("__pycache__"))
    home = tmp_path / "home"
    home.mkdir()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    for path in [install, *install.rglob("*"), home]:
        path.chmod(path.stat().st_mode & ~0o222)
    script = ("import sys, warnings; warnings.simplefilter('always')\n"
              "import symgraph as sg\n"
              "assert sg.__file__.startswith(sys.argv[1]), sg.__file__\n"
              "print(sg.compile('x**3 + x*y', ['x', 'y']).grad(2.0, 3.0).tolist())\n"
              "from symgraph.cli.main import main\n"
              "sys.exit(main(['grad', 'x**3 + x*y', '--at', 'x=2,y=3', '--json']))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("SYMGRAPH_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(PYTHONPATH=str(install), HOME=str(home), TMPDIR=str(temporary))
    try:
        done = subprocess.run([*prefix, sys.executable, "-c", script, str(install)],
                              capture_output=True, text=True, timeout=600, env=env,
                              cwd=temporary)
    finally:
        for path in [install, *install.rglob("*"), home]:
            path.chmod(path.stat().st_mode | 0o200)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "[15.0, 2.0]"
    assert json.loads("\n".join(lines[1:]))["gradient"] == [15.0, 2.0]
    assert "cannot use the cache folder" in done.stderr
    assert list(temporary.glob("symgraph-*/sg_*.py"))


SECOND_USER = r"""
import os, sys
import symgraph as sg
# Everything a compile imports, imported while the files are readable (they live under
# /root); then the second user's compile in the shared folder.
warm = sg.compile("x**2 + y", ["x", "y"], backend="python", cache_dir=sys.argv[2])
os.environ["SYMGRAPH_CACHE_DIR"] = sys.argv[1]
os.setgroups([]); os.setgid(65534); os.setuid(65534)
before = {p.name: p.stat().st_mtime_ns for p in __import__("pathlib").Path(sys.argv[1]).iterdir()}
f = sg.compile("x**3 + x*y", ["x", "y"], backend="python")
print(f.grad(2.0, 3.0).tolist())
after = {p.name: p.stat().st_mtime_ns for p in __import__("pathlib").Path(sys.argv[1]).iterdir()}
print(sorted(n for n in before if after.get(n) != before[n]))
"""


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become a second user")
def test_a_second_user_reuses_a_shared_cache_folder_without_rewriting_it(tmp_path):
    import tempfile

    import symgraph as sg

    shared = Path(tempfile.mkdtemp(prefix="symgraph-shared-"))  # (pytest's folders are 0700)
    try:
        shared.chmod(0o1777)  # like /tmp: anyone makes files, no one replaces another's
        old = os.umask(0o022)
        try:
            f = sg.compile("x**3 + x*y", ["x", "y"], backend="python", cache_dir=shared)
        finally:
            os.umask(old)
        assert f.grad(2.0, 3.0).tolist() == [15.0, 2.0]
        done = subprocess.run([sys.executable, "-c", SECOND_USER, str(shared),
                               str(tmp_path / "warm")], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        shutil.rmtree(shared)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["[15.0, 2.0]", "[]"]


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MB tmpfs, filled up; skipped where mounting is not allowed."""
    if not IS_ROOT or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                      capture_output=True).returncode:
        pytest.skip("this machine does not allow mounting a tmpfs")
    try:
        with open(mount / "filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_costs_the_saving_of_records_and_tapes_never_the_call(
        full_disk, tmp_path, monkeypatch):
    import tempfile
    import warnings

    import symgraph as sg

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape = sg.compile("sin(x)*y**3 + 11*x", ["x", "y"], strategy="tape", cache_dir=full_disk)
        python = sg.compile("x**3 + 11*x*y", ["x", "y"], backend="python", cache_dir=full_disk)
    expected = [np.cos(2.0) * 27 + 11, np.sin(2.0) * 27]
    assert np.allclose(tape.grad(2.0, 3.0), expected, rtol=1e-14)
    assert python.grad(2.0, 3.0).tolist() == [45.0, 22.0]
    assert any("could not keep" in str(w.message) for w in caught)
    assert not list(full_disk.glob("expr_*")) and not list(full_disk.glob(".tmp-*"))


CONCURRENT = r"""
import sys
import symgraph as sg
out = []
for k in range(1, 4):
    f = sg.compile(f"x**3 + {k}*x*y", ["x", "y"], backend=sys.argv[1])
    out.append(f.grad(2.0, 3.0).tolist())
print(out)
"""


def test_processes_sharing_one_cache_folder_all_get_the_right_numbers(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SYMGRAPH_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, backend], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for backend in ("python", "python", "numba")]
    expected = str([_expected(k) for k in range(1, 4)])
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err[-3000:]
        assert out.strip() == expected
    assert not list(tmp_path.glob(".tmp-*"))  # no partial file left behind
