"""Kernels come back from Numba's on-disk cache in a fresh process without Numba's per-process
registry refresh (symgraph.backends.numba.cache), and with the very same numbers; a cache missing
its machine code falls back to the usual path; compiling them refreshes Numba lightly (without
linalg's SciPy: backends.numba.runtime.refresh), and user code compiled after that still works."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import json, sys
import numpy as np
from numba.core.runtime import nrtdynmod
built_runtime = []  # Numba's runtime functions built (not read back from the kept copy)
make_runtime = nrtdynmod.create_nrt_module
nrtdynmod.create_nrt_module = lambda ctx: built_runtime.append(1) or make_runtime(ctx)
import symgraph as sg
from numba.core.imputils import builtin_registry  # which Numba's refresh installs
from numba.core.registry import cpu_target
from symgraph.backends.numba import cache as numba_cache

x, y = sg.symbols("x y")
fn = sg.compile(sg.exp(x * y) + x**3 / y + sg.sin(y), [x, y], cache_dir=sys.argv[1],
                strategy="straight")  # (auto would interpret these few calls)
value, grad = fn.value_and_grad(0.5, 1.5)
X = np.linspace(0.1, 2.0, 40).reshape(20, 2)
values, grads = fn.value_and_grad(X)
linalg = "scipy.linalg" in sys.modules  # what Numba's full refresh imports (numba.np.linalg)
tape = sg.compile(sg.exp(x * y) + x**3 / y + sg.sin(y), [x, y], strategy="tape")
tape_values, tape_grads = tape.value_and_grad(X)
from symgraph.backends.tape import interpreter as tape_interpreter
from symgraph.backends.tape import passes as tape_passes
ran = {
    "linalg": linalg,
    "tape": [v.hex() for v in np.concatenate([tape_values, tape_grads.ravel()])],
    "tape_preloaded": sorted(d.__name__ for m in (tape_interpreter, tape_passes)
                             for d in numba_cache.dispatchers_of(m) if d.overloads),
    "value": value.hex(), "grad": [g.hex() for g in grad],
    "batch": [v.hex() for v in np.concatenate([values, grads.ravel()])],
    "refreshed": builtin_registry in cpu_target.target_context._registries,
    "typed_arrays": "numpy.ma" in sys.modules,  # numba.typeof of an array imports numpy.ma
    "preloaded": sorted(d.__name__ for d in numba_cache.dispatchers_of(fn.module)
                        if d.overloads),
    "runtime_built": bool(built_runtime),
}  # (refreshed and typed_arrays: before the user's own compile below, which refreshes)
from numba import njit
ran["user_dot"] = njit(lambda a: np.dot(a, a))(np.ones(3))  # user code after symgraph's compiles
if len(sys.argv) > 2:  # a jitted caller of a kernel read back links it in (its bitcode, parsed now)
    row = fn.module.value_grad_row
    @njit
    def caller(v):
        o = np.empty(3)
        row(v, o)
        return o
    ran["linked"] = [v.hex() for v in caller(np.array([0.5, 1.5]))]
print(json.dumps(ran))
"""


def _run(cache: Path, *extra: str) -> dict:
    # (the cache folder is the default one too: where the runtime's kept copy lives)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(cache), *extra], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "SYMGRAPH_CACHE_DIR":
                                                        str(cache)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> tuple[Path, dict]:
    cache = tmp_path_factory.mktemp("numba-cache")
    return cache, _run(cache)


def test_a_fresh_process_runs_cached_kernels_without_numbas_registry_refresh(first_run):
    cache, first = first_run
    assert first["refreshed"]  # the first process compiled, which refreshes
    assert not first["linalg"]  # ... lightly (runtime.refresh): no SciPy for BLAS
    assert first["user_dot"] == 3.0  # and the user's own np.dot compiles as usual after it
    again = _run(cache, "link")
    assert not again["refreshed"]
    assert again["linked"] == [again["value"], *again["grad"]]
    assert first["typed_arrays"]  # compiling typed the arguments
    assert not again["typed_arrays"]  # cached kernels were called through their entry points
    assert {"value_grad_point", "value_grad_chunks"} <= set(again["preloaded"])
    # Kernels are read on their first call: the value kernels, never called, stay unread.
    assert not {"value_row", "value_chunks", "value_point"} & set(again["preloaded"])
    # Numba's runtime: built by the first process (and kept), read back by the second.
    assert first["runtime_built"] and not again["runtime_built"]
    assert "run_batch" in again["tape_preloaded"]  # (its tape is read back: no passes to run)
    for key in ("value", "grad", "batch", "tape"):
        assert again[key] == first[key]


def test_a_cache_missing_its_machine_code_falls_back_to_numbas_usual_path(first_run):
    cache, first = first_run
    stems = [source.stem for source in cache.glob("sg_*.py")]
    roots = [cache, *([Path(os.environ["NUMBA_CACHE_DIR"])] if os.environ.get("NUMBA_CACHE_DIR")
                      else [])]  # Numba keeps its files beside the source, or under that folder
    data = [path for root in roots for path in root.rglob("*.nbc")  # the machine code; the
            if path.name.split(".")[0] in stems]  # index still lists it
    assert data
    for path in data:
        path.unlink()
    [kept] = cache.glob("nrt-*.bin")  # the runtime's kept copy, damaged too: built again
    damaged = bytearray(kept.read_bytes())
    damaged[-1] ^= 1
    kept.write_bytes(bytes(damaged))
    again = _run(cache)
    assert again["refreshed"]  # compiled again, the usual way
    assert again["runtime_built"]
    from symgraph.backends.numba.runtime.startup import _read

    assert _read(kept) is not None  # written anew, whole
    for key in ("value", "grad", "batch"):
        assert again[key] == first[key]


def test_a_thread_finding_a_kernel_preloaded_finds_its_machine_code_there(monkeypatch):
    # The second thread must not return (and call the kernel) while the first still loads:
    # a call that found no overload would take Numba's own path and its full refresh.
    import threading
    import time

    from symgraph.backends.numba import cache as numba_cache

    started, loaded = threading.Event(), []

    def slow_load(dispatcher):
        started.set()
        time.sleep(0.2)
        loaded.append(dispatcher)
        return 1

    monkeypatch.setattr(numba_cache, "_load_overloads", slow_load)
    kernel = type("Dispatcher", (), {})()  # stands for one: preload only passes it on
    first = threading.Thread(target=numba_cache.preload, args=([kernel],))
    first.start()
    assert started.wait(5)
    numba_cache.preload([kernel])  # the second thread
    assert loaded == [kernel]
    first.join()
    assert loaded == [kernel]  # loaded once


def test_entry_points_are_given_only_for_plain_arrays_of_a_compiled_signature():
    import numpy as np
    from numba import njit

    from symgraph.backends.numba.cache import entry_point

    @njit
    def scale(x, out, k):
        for i in range(x.shape[0]):
            out[i] = k * x[i]

    x, out = np.arange(4.0), np.empty(4)
    assert entry_point(scale, (x, out, 2.0)) is None  # nothing compiled yet
    scale(x, out, 2.0)
    entry = entry_point(scale, (np.empty(0), np.empty(0), 0.5))  # sizes are not in a type
    assert entry is not None
    entry(x, out, 3.0)
    assert out.tolist() == [0.0, 3.0, 6.0, 9.0]
    frozen = x.copy()
    frozen.flags.writeable = False
    for odd in (x[::2], x.astype(np.float32), x.astype(">f8"), frozen, x.reshape(2, 2),
                np.asfortranarray(np.ones((2, 2)))[:, :1]):
        assert entry_point(scale, (odd, out, 2.0)) is None
    assert entry_point(scale, (x, out, 2)) is None  # an int is another signature


def test_cached_machine_code_is_dropped_when_a_file_it_inlines_changes(tmp_path, monkeypatch):
    # Numba's cache checks only the function's own file: the tape interpreter's machine code
    # holds vecmath's functions too, and would stay stale after an edit of vecmath alone.
    import importlib

    from symgraph.backends.numba.cache import drop_if_changed

    dependency = tmp_path / "dependency.py"
    dependency.write_text("K = 1\n")
    (tmp_path / "sg_probe_kernels.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "sg_probe_kernels", raising=False)
    f = importlib.import_module("sg_probe_kernels").f
    assert f(1.0) == 2.0
    assert f._cache._cache_file._load_index()  # cached, before any digest was kept
    assert drop_if_changed([f], [dependency])  # so it may be stale: dropped
    assert not f._cache._cache_file._load_index()
    f.recompile()  # compiled (and cached) again
    assert f._cache._cache_file._load_index()
    assert not drop_if_changed([f], [dependency])  # nothing changed since
    assert f._cache._cache_file._load_index()
    dependency.write_text("K = 2\n")
    assert drop_if_changed([f], [dependency])
    assert not f._cache._cache_file._load_index()
    assert not drop_if_changed([f], [dependency])


def test_a_kernel_needing_more_than_the_light_refresh_compiles_again_with_all_of_numba():
    # In a fresh process (Numba not yet refreshed): np.dot is linalg's, which the light
    # first refresh (backends.numba.runtime.refresh) leaves out, so the compile inside it
    # fails (in a function the kernel calls, as a user function's implementation would) and
    # resolve compiles again outside it, with every registry loaded.
    script = ("import numpy as np\n"
              "from numba import njit\n"
              "from symgraph.backends.numba.cache import resolve\n"
              "inner = njit(lambda a: np.dot(a, a))\n"
              "entry = resolve(njit(lambda a: inner(a) + 1.0), (np.empty(0),))\n"
              "print(entry(np.arange(4.0)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) == 15.0


SPECIAL = """
import json, sys
import numpy as np
import symgraph as sg
from symgraph.backends.numba import special
x, y = sg.symbols("x y")
deferred = type(special._sf_lgamma._cache).__name__  # before anything compiles it
expr = sg.lgamma(x) * y if sys.argv[2] == "first" else sg.lgamma(x) + y**2 * x
point = (2.5, 0.75)
fn = sg.compile(expr, [x, y], cache_dir=sys.argv[1], strategy="straight")
value, grad = fn.value_and_grad(*point)
oracle = sg.compile(expr, [x, y], backend="python")
want, want_grad = oracle.value_and_grad(*point)
lgamma = special._sf_lgamma
hits, misses = sum(lgamma.stats.cache_hits.values()), sum(lgamma.stats.cache_misses.values())
print(json.dumps({"deferred": deferred, "cache": type(lgamma._cache._cache_file).__name__,
                  "hits": hits, "misses": misses,
                  "got": [float(value), *map(float, grad)],
                  "want": [float(want), *map(float, want_grad)]}))
"""


def test_special_functions_set_up_their_cache_on_first_compile_and_load_from_it_in_a_warm_process(
        tmp_path):
    # special.py's functions are defined without Numba's cache set-up (cache_files.
    # cached_on_first_compile): the first process compiles lgamma and saves it; a second one,
    # whose kernel is a cache miss (another expression), loads lgamma from those files while
    # typing the kernel; both kernels agree with the Python backend (the same special.py).
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "SYMGRAPH_CACHE_DIR": str(tmp_path / "sg")}
    runs = {}
    for which in ("first", "second"):
        done = subprocess.run([sys.executable, "-c", SPECIAL, str(tmp_path / "sg"), which],
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
        runs[which] = json.loads(done.stdout.splitlines()[-1])
    for run in runs.values():
        assert run["deferred"] == "NullCache"  # no cache set-up at import
        assert run["cache"] == "CheckedCacheFile"  # ... and the checked files once compiled
        assert run["got"] == pytest.approx(run["want"], rel=1e-13, abs=1e-15)
    assert runs["first"]["misses"] >= 1 and runs["first"]["hits"] == 0
    assert runs["second"]["hits"] >= 1 and runs["second"]["misses"] == 0
    assert list((tmp_path / "numba").rglob("special.lgamma-*.nbi"))
