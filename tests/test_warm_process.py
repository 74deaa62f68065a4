"""A warm process (a second one, over the caches a first one filled) sets up without what only
compiling needs: the lowering's modules, the special functions' dispatchers, vecmath's
dispatchers (`backends.numba.deferred`), the lane weight of a program whose kernels are cached
(its steps stay undecoded); and it gives the first process's numbers. A cache miss in such a
process still compiles, through the parts it did not import, to NumPy's numbers."""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from symgraph.backends.numba import cache as numba_cache
from symgraph.backends.numba import vecmath
from symgraph.backends.numba.deferred import DeferredJit, jit

SCRIPT = """
import json, sys
import numpy as np
import symgraph as sg
from symgraph.backends.numba import batch

weighed = []  # programs whose lane weight was taken (it reads every step)
weight = batch.lane_weight
batch.lane_weight = lambda p: weighed.append(p.name) or weight(p)
x, y = sg.symbols("x y")
fn = sg.compile(sg.exp(x * y) + x**3 / y + sg.sin(y) * sg.log(x), [x, y], cache_dir=sys.argv[1])
X = np.linspace(0.1, 2.0, 40000).reshape(20000, 2)
fn.value_and_grad(0.5, 1.5)
fn.value_and_grad(X)
if sys.argv[2] == "first":  # the kernels its calls would switch to, compiled now
    fn._built.straight()
for _ in range(1000):  # interpreted until that pays (a load, in a warm process)
    if fn._built.made:
        break
    fn.value_and_grad(X)
value, grad = fn.value_and_grad(0.5, 1.5)  # compiled
fn.value_and_grad_floats(0.5, 1.5)  # (loads the floats kernel, binds its own CPython entry)
floats = fn.value_and_grad_floats(0.5, 1.5)
values, grads = fn.value_and_grad(X)
from symgraph.backends.numba import vecmath

ran = {
    "value": value.hex(), "grad": [g.hex() for g in grad],
    "batch": [v.hex() for v in np.concatenate([values[::997], grads[::997].ravel()])],
    "switched": fn._built.made,
    "floats": [floats[0].hex(), *(g.hex() for g in floats[1])],
    "floats_entry": type(fn.value_and_grad_floats).__name__,
    "weighed": weighed,
    "decoded": [p.name for p in fn._built.programs if "steps" in vars(p)],
    "imported": sorted(m for m in ("symgraph.backends.numba.runtime.lowering",
                                   "symgraph.backends.numba.runtime.lanes",
                                   "symgraph.backends.numba.special") if m in sys.modules),
    "vecmath_made": sorted(n for n in vecmath.PUBLIC if getattr(vecmath, n)._made is not None),
}
if sys.argv[2].startswith("miss"):  # then a cache miss: an expression not compiled yet
    a = float(sys.argv[2][4:])
    new = sg.compile(sg.exp(x) * sg.cos(y) + sg.gamma(x + a) + sg.tanh(x * y), [x, y],
                     cache_dir=sys.argv[1], strategy="straight")
    nv, ng = new.value_and_grad(X)
    ran["miss"] = [nv[::997].tolist(), ng[::997].tolist()]
print(json.dumps(ran))
"""


def _run(cache, *extra: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(cache), *extra],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SYMGRAPH_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    cache = tmp_path_factory.mktemp("warm")
    return cache, _run(cache, "first")


def test_a_warm_process_loads_the_kernels_without_the_lowering_special_or_vecmath(first_run):
    cache, first = first_run
    assert first["switched"] and first["weighed"]  # compiled: the weight chose the lanes
    again = _run(cache, "warm")
    assert again["switched"]  # the batches loaded the compiled kernels...
    assert again["weighed"] == [] and again["decoded"] == []  # ... with no lane weight taken
    assert again["imported"] == []  # nothing that lowers or compiles
    assert again["vecmath_made"] == []  # the module's vexp/vsin/vlog: never made
    # value_and_grad_floats: the entry emitted beside the floats kernel, from Numba's cache
    assert again["floats_entry"] == first["floats_entry"] == "builtin_function_or_method"
    assert again["floats"] == first["floats"] == [again["value"], *again["grad"]]
    for key in ("value", "grad", "batch"):
        assert again[key] == first[key]


def test_a_cache_miss_in_a_warm_process_compiles_through_what_it_did_not_import(first_run):
    from scipy.special import gamma

    cache, first = first_run
    a = 0.25
    again = _run(cache, f"miss{a}")
    for key in ("value", "grad", "batch"):
        assert again[key] == first[key]
    X = np.linspace(0.1, 2.0, 40000).reshape(20000, 2)[::997]
    x, y = X[:, 0], X[:, 1]
    value, grad = (np.array(v) for v in again["miss"])
    np.testing.assert_allclose(value, np.exp(x) * np.cos(y) + gamma(x + a) + np.tanh(x * y),
                               rtol=1e-13)
    dx = np.exp(x) * np.cos(y) + (gamma(x + a + 1e-6) - gamma(x + a - 1e-6)) / 2e-6 + (
        y / np.cosh(x * y) ** 2)
    np.testing.assert_allclose(grad[:, 0], dx, rtol=1e-6)  # (gamma's by central differences)
    np.testing.assert_allclose(grad[:, 1], -np.exp(x) * np.sin(y) + x / np.cosh(x * y) ** 2,
                               rtol=1e-12)


def test_a_deferred_dispatcher_is_made_once_on_first_use_and_types_in_jitted_callers():
    from numba import njit

    def square_plus(v):
        return v * v + 1.0

    deferred = jit(error_model="numpy")(square_plus)
    assert deferred._made is None and deferred.__name__ == "square_plus"
    assert deferred.py_func is square_plus  # what the lowering inlines, without making it
    assert numba_cache.dispatchers_of(type("M", (), {"f": deferred})) == []  # (still unmade)
    assert deferred._made is None

    @njit
    def caller(v):
        return deferred(v) * 2.0

    assert caller(3.0) == 20.0  # typed through `_numba_type_`: made now
    made = deferred._made
    assert made is not None and deferred(2.0) == 5.0 and deferred.dispatcher is made
    assert deferred.signatures  # any other attribute is the dispatcher's

    many = jit()(square_plus)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(many.dispatcher)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(d is seen[0] for d in seen)  # made once, whichever thread asked first


def test_vecmaths_functions_are_deferred_and_give_their_numbers_when_called():
    assert all(isinstance(getattr(vecmath, n), DeferredJit) for n in vecmath.PUBLIC)
    x = np.linspace(-4.0, 4.0, 101)
    out = np.empty_like(x)
    vecmath.vsin_array(x, out)  # a deferred dispatcher calling deferred ones
    np.testing.assert_allclose(out, np.sin(x), rtol=0, atol=2e-16)
    assert vecmath.vexp(1.0) == np.exp(1.0)


def test_a_kept_module_is_imported_without_hashing_again_and_written_again_if_gone(
        tmp_path, monkeypatch):
    from symgraph.runtime import loading

    text = "VALUE = 41 + 1\n"
    module, path = loading.load_source(text, tmp_path)
    name = path.name
    assert loading.kept_source(tmp_path, name) == text
    path.unlink()  # gone between reading it and importing it: written again

    def no_hashing(source):
        raise AssertionError("hashed again")

    monkeypatch.setattr(loading, "source_digest", no_hashing)
    again, again_path = loading.load_source(text, tmp_path, kept=name)
    assert again_path == path and path.read_text() == text and again.VALUE == 42
