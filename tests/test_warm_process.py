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
from numba.core.runtime import rtsys
from llvmlite.binding import ffi

# Numba's runtime from the kept copy, its bitcode not parsed; llvmlite's lock events quiet
ran["runtime_bitcode_parsed"] = "_sg_bitcode" not in vars(rtsys._library)
from numba.core import registry
engine = registry.cpu_target.target_context.codegen()._llvm_module._CPUCodeLibrary__library
# MCJIT compiled the engine's own module (the compiled hook ran), or took the kept object
ran["engine_module"] = [engine._compiled, engine._compiled_object is None]
ran["events_quiet"] = all(getattr(enter, "_sg_quiet", False) for enter, _ in ffi.lib._lock._cblist)
from symgraph.backends import lazy_code
module = fn._built.module  # steps and lanes: stubs until called (their bytecode unread)
ran["stubs"] = sorted(n for n, v in vars(module).items() if lazy_code.is_stub(v))
out = np.empty(3)
module.value_grad_steps(np.array([0.5, 1.5]), out)  # run as Python: its real code fetched
ran["steps_in_python"] = [v.hex() for v in out]
ran["stubs_after"] = sorted(n for n, v in vars(module).items() if lazy_code.is_stub(v))
with open(fn.path, encoding="utf-8") as f:  # the text, unread until asked for: the file's
    ran["source_is_the_file"] = fn.source == f.read() and "def value_grad_steps(" in fn.source
from symgraph.backends.numba.cache import dispatchers_of
ran["caches_unmade"] = sorted(d.__name__ for d in dispatchers_of(fn._built.module)
                              if type(d._cache).__name__ == "CacheOnUse")
if sys.argv[2].startswith("miss"):  # then a cache miss: an expression not compiled yet
    a = float(sys.argv[2][4:])
    new = sg.compile(sg.exp(x) * sg.cos(y) + sg.gamma(x + a) + sg.tanh(x * y), [x, y],
                     cache_dir=sys.argv[1], strategy="straight")
    nv, ng = new.value_and_grad(X)
    ran["miss"] = [nv[::997].tolist(), ng[::997].tolist()]
    ran["runtime_bitcode_parsed"] = "_sg_bitcode" not in vars(rtsys._library)  # linked in
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
    assert not again["runtime_bitcode_parsed"] and again["events_quiet"]
    # the engine's empty module: compiled by the first process (its object kept with the
    # runtime's), loaded from that copy by the second, never compiled there
    assert first["engine_module"] == [True, False] and again["engine_module"] == [False, True]
    # Numba's cache made for the kernels it loaded only: the value kernels' never (nor checked)
    assert {"value_row", "value_chunks", "value_point"} <= set(again["caches_unmade"])
    assert "value_grad_chunks" not in again["caches_unmade"]
    for key in ("value", "grad", "batch"):
        assert again[key] == first[key]
    # the steps and lanes were imported as stubs (the first process ran the whole bytecode);
    # one called as Python fetched its code and gave the kernels' numbers
    assert first["stubs"] == [] and {"value_grad_steps", "value_grad_lanes",
                                     "value_steps"} <= set(again["stubs"])
    assert "value_grad_steps" not in again["stubs_after"]
    assert again["steps_in_python"] == [again["value"], *again["grad"]]
    assert again["source_is_the_file"] and first["source_is_the_file"]


def test_a_cache_miss_in_a_warm_process_compiles_through_what_it_did_not_import(first_run):
    from scipy.special import gamma

    cache, first = first_run
    a = 0.25
    again = _run(cache, f"miss{a}")
    for key in ("value", "grad", "batch"):
        assert again[key] == first[key]
    assert again["runtime_bitcode_parsed"]  # the compile linked the lazily loaded runtime in
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


def test_a_kept_module_is_imported_without_reading_its_text_and_made_again_once_edited(
        tmp_path, monkeypatch):
    from symgraph.backends import imports
    from symgraph.runtime import loading

    # Kept under PYTHONDONTWRITEBYTECODE too (container images set it): the cache folder is
    # symgraph's, and without its bytecode every warm process compiled the text again.
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    text = "VALUE = 41 + 1\n"
    module, path = loading.load_source(text, tmp_path)  # a first process: file and bytecode
    name = path.name
    assert loading.kept_file(tmp_path, name) and not loading.kept_file(tmp_path, "x.py")
    read, renders = [], []
    real = loading.read_text
    monkeypatch.setattr(loading, "read_text", lambda p: read.append(p.name) or real(p))

    def render():
        renders.append(name)
        return text

    def imported_again():  # (as in another process: the module not imported yet)
        sys.modules.pop(f"symgraph_generated_{name[3:-3]}", None)
        return loading.load_kept(tmp_path, name, render)[0]

    again = imported_again()
    assert again.VALUE == 42 and read == [] and renders == []  # the kept bytecode alone
    assert imports.text_of(again) == text and read == [name]  # read and checked when asked
    path.write_text("VALUE = 0\n")  # edited since: its stamp is not the bytecode's
    third = imported_again()
    assert third.VALUE == 42 and renders == [name] and path.read_text() == text


def test_llvmlites_lock_events_reach_a_listener_as_numbas_own_pair_sends_them_and_none_else():
    import llvmlite.binding as ll
    from numba.core import event

    from symgraph.backends.numba.runtime import startup

    assert startup.quiet_llvm_events()  # (in place since the runtime's import; idempotent)
    made = []
    start = event.start_event
    try:
        event.start_event = lambda kind, data=None: made.append(kind) or start(kind, data)
        ll.get_process_triple()  # an llvmlite call, no one listening: no event made
        assert made == []
        with event.install_recorder("numba:llvm_lock") as recorder:
            ll.get_process_triple()
        statuses = [e.status for _, e in recorder.buffer]  # (a start and an end per call)
        assert statuses and statuses == [event.EventStatus.START,
                                          event.EventStatus.END] * (len(statuses) // 2)
        assert len(made) == len(statuses) // 2
    finally:
        event.start_event = start


def test_symbols_added_directly_pass_no_llvmlite_lock_and_resolve_as_added_ones_do():
    import llvmlite.binding as ll
    from numba.core import event

    from symgraph.backends.numba.runtime import startup

    usual = ll.add_symbol
    with event.install_recorder("numba:llvm_lock") as recorder:
        ll.add_symbol("sg_test_symbol_usual", 0x1234)
        through_lock = len(recorder.buffer)
        with startup.direct_symbols():
            assert ll.add_symbol is not usual
            with startup.direct_symbols():  # (nested: the same direct one)
                ll.add_symbol("sg_test_symbol_direct", 0x5678)
        direct = len(recorder.buffer) - through_lock
    assert ll.add_symbol is usual  # put back
    assert through_lock == 2 and direct == 0  # (a start and an end through the lock)
    assert ll.address_of_symbol("sg_test_symbol_direct") == 0x5678
    assert ll.address_of_symbol("sg_test_symbol_usual") == 0x1234
    context = startup.target_context()  # Numba's, made with them: its helpers resolve
    assert context is startup.target_context()
    assert ll.address_of_symbol("numba_gil_ensure") and ll.address_of_symbol("PyExc_KeyError")


def test_plain_argument_types_are_numbas_own_types_of_them():
    from numba import typeof, types

    from symgraph.backends.numba.cache import _plain_type

    samples = [np.zeros((3, 2)), np.zeros(4, np.int64), np.zeros(2, np.int32), 3, 2.5, None,
               (1.0, 2.0), np.float64(1.5)]
    for value in samples:
        assert _plain_type(value) == typeof(value if not isinstance(value, np.float64)
                                            else float(value)), value
    assert _plain_type(types.float64) is types.float64  # a Numba type stands for itself
    for refused in (np.zeros((3, 2))[:, 0], np.zeros(3, np.float32), True, "x", (1.0, 2)):
        assert _plain_type(refused) is None


def test_the_interpret_first_rule_weighs_ops_numpy_runs_in_python_by_their_np_ns():
    from symgraph.ir.ops import OPS
    from symgraph.runtime import interpret

    in_python = {n for n, s in OPS.items() if isinstance(s.evaluate, np.vectorize)}
    assert {"erf", "erfc", "gamma", "besselj"} <= in_python
    # NumPy's select: where and the comparisons, an op's whole NumPy form an np.where
    selects = {"where", "lt", "le", "gt", "ge", "eq", "ne"}
    assert all(OPS[n].np.startswith("np.where(") for n in selects)
    # cbrt's NumPy form: ~20 whole-array operations for its correctly rounded bits
    composite = {"cbrt", "xlogy"}  # NumPy forms of several whole-array operations each
    # NumPy's float64 sin and cos (~15 ns an element, exp ~0.8), np.power of a real exponent
    slow_ufuncs = {"sin", "cos", "pow"}
    for name, spec in OPS.items():  # the op table says which take more than an ordinary op
        assert (spec.np_ns > interpret.INTERP_BATCH_NS_PER_OP) == (
            name in in_python | selects | composite | slow_ufuncs), name
    census = {("erf", 1, None): 8, ("mul", 2, None): 90, ("exp", 1, None): 4}
    per_point = 8 * (OPS["erf"].np_ns - interpret.INTERP_BATCH_NS_PER_OP)
    assert interpret.python_element_ns(census) == per_point
    # x**2.5 is np.power's; x**3 is two products, an ordinary op's cost
    assert interpret.python_element_ns({("pow", 2, None): 2}) == 2 * (
        OPS["pow"].np_ns - interpret.INTERP_BATCH_NS_PER_OP)
    assert interpret.python_element_ns({("pow", 2, 3): 2}) == 0.0
    without = interpret.batch_loss_ns(102, 20_000)
    assert interpret.batch_loss_ns(102, 20_000, per_point) == without + per_point * 20_000

    def pending(census: dict) -> interpret.Pending:
        return interpret.Pending("value_grad", 50, lambda: None, lambda: None, lambda: True,
                                 census=lambda: census)

    # (~1 ms lost, the first batch's module import counted: under any budget)
    X, OUT = np.zeros((2_000, 6)), np.zeros((2_000, 7))
    assert pending({("mul", 2, None): 50})._batch_now(X, OUT)  # interpreted ...
    assert not pending({("gamma", 1, None): 1, ("mul", 2, None): 49})._batch_now(X, OUT)
    # ... but one gamma (~28 us a point in Python) makes the batch switch at once


def test_a_first_interpreted_batch_weighs_its_first_touched_blocks_so_hundreds_of_ops_load():
    # Held out at ~300 value operations (value+gradient programs of 479-894), interpreting a
    # function's first batch cost 5-16 ms more than loading its kernels: its first blocks'
    # temporaries touched for the first time, weighed per operation on the first batch only.
    from symgraph.runtime import interpret

    def pending(ops: int) -> interpret.Pending:
        return interpret.Pending("value_grad", ops, lambda: None, lambda: None, lambda: True,
                                 census=lambda: {("mul", 2, None): ops})

    X, OUT = np.zeros((20_000, 6)), np.zeros((20_000, 7))
    big = pending(700)
    assert not big._batch_now(X, OUT)  # its first batch: loaded, whatever Numba has started
    assert interpret.batch_loss_ns(700, 20_000) < interpret.switch_ms(700, True) * 1e6 + 7e6
    # (without the import's weight, 9.1 ms against a first load's 10.4: interpreted)
