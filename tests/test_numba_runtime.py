"""symgraph's Numba runtime (symgraph.backends.numba.runtime): generated modules import it, it
checks itself, falls back to plain @njit with a warning when Numba's internals fail it, and a
change of it renames every generated module (so Numba's cache of them cannot go stale)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.numba import cache as numba_cache
from symgraph.backends.numba import packs, runtime
from symgraph.backends.numba.batch import uses_lanes
from symgraph.runtime.loading import load_source

# A row kernel, and a lane kernel with vecmath calls (exp, log, sin: the flagged fix-up too).
EXPRESSION = ("x, y = sg.symbols('x y')\n"
              "expr = sg.add(*[sg.exp(x * k) * sg.sin(y + k) + sg.log(1 + x * x * k) "
              "for k in range(4)])")
POINTS = ([[0.5, 1.5], [2.0, -1.0], [1e9, 0.25], [0.0, 0.0], [-3.0, 7e7], [-1e-300, 1.0]]
          + np.random.default_rng(1).normal(0.0, 2.0, (300, 2)).tolist())

CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    {sabotage}
    import symgraph as sg
    from symgraph.backends.numba import runtime
    runtime.verdict_stamps = lambda: []  # run the probe, whatever an earlier run found
    {expression}
    X = np.array({points}, dtype=float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = sg.compile(expr, [x, y], cache_dir=sys.argv[1], strategy="straight")
        rows = np.array([np.r_[fn.value_and_grad(*p)] for p in X])
        floats = np.array([np.r_[v, g] for v, g in (fn.value_and_grad_floats(*p) for p in X)])
        values, grads = fn.value_and_grad(X)
        summed = sg.compile(expr, [x], data=[y], reduce="sum", cache_dir=sys.argv[1])
        total = np.r_[summed.value_and_grad([0.3], X[:, 1])]
    print(json.dumps({{
        "sums": [v.hex() for v in total],
        "rows": [v.hex() for v in rows.ravel()],
        "floats": [v.hex() for v in floats.ravel()],
        "batch": [v.hex() for v in np.c_[values, grads].ravel()],
        "warnings": [str(w.message) for w in caught if w.category is RuntimeWarning],
        "lowered": runtime.LOWERED, "atomic": runtime.ATOMIC,
    }}))
""")


def _child(tmp_path, sabotage: str = "") -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    script = CHILD.format(sabotage=sabotage, expression=EXPRESSION, points=POINTS)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "sg")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def lowered():
    """The numbers of the lowered kernels, in this process."""
    namespace = {"sg": sg}
    exec(EXPRESSION, namespace)  # the test's own constant text, not user input
    with pytest.MonkeyPatch.context() as m:  # no packs: their vecmath calls are within an ulp
        m.setattr(packs, "MIN_MEMBERS", 10**9)  # of libm's, which the plain fallback calls
        fn = sg.compile(namespace["expr"], [namespace["x"], namespace["y"]],
                        strategy="straight")
    assert all(uses_lanes(p) for p in fn.programs)  # the batch runs lane code
    X = np.array(POINTS)
    rows = np.array([np.r_[fn.value_and_grad(*p)] for p in X])
    floats = np.array([np.r_[v, g] for v, g in (fn.value_and_grad_floats(*p) for p in X)])
    assert floats.tobytes() == rows.tobytes()  # value_grad_floats: the point kernel's bits
    values, grads = fn.value_and_grad(X)
    # A reduction's lane kernel (runtime.lane_sums): 306 rows, the last block short.
    summed = sg.compile(namespace["expr"], [namespace["x"]], data=[namespace["y"]], reduce="sum")
    total = np.r_[summed.value_and_grad([0.3], X[:, 1])]
    return {"rows": [v.hex() for v in rows.ravel()], "sums": [v.hex() for v in total],
            "batch": [v.hex() for v in np.c_[values, grads].ravel()], "fn": fn}


def test_the_probe_passes_on_this_numba_and_warns_nothing(monkeypatch):
    monkeypatch.setattr(runtime, "_verdict", [])
    monkeypatch.setattr(runtime, "verdict_stamps", lambda: [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert runtime.check()
    assert runtime.missing() == [] and runtime.LOWERED and runtime.ATOMIC


def test_a_missing_internal_falls_back_to_plain_njit_with_a_warning_and_the_same_numbers(
        tmp_path, lowered):
    result = _child(tmp_path, "import numba.extending\n"
                              "del numba.extending.intrinsic  # as if a Numba release moved it")
    assert not result["lowered"] and not result["atomic"]
    assert any("numba.extending.intrinsic" in w and "plain numba.njit" in w
               for w in result["warnings"]), result["warnings"]
    assert result["rows"] == lowered["rows"]  # plain @njit of the steps: the same bits
    assert result["floats"] == lowered["rows"]  # (value_and_grad_floats: the checked path)
    assert result["batch"] == lowered["rows"]  # the batch, row by row: the row kernel's bits
    assert result["sums"] == lowered["sums"]  # a reduction's lanes as plain njit loops


def test_a_failed_check_falls_back_to_plain_njit_with_a_warning_and_the_same_numbers(
        tmp_path, lowered):
    # The lowering compiles but computes wrong numbers (a + b lowered as a - b): the probe
    # must catch it before any generated kernel is lowered.
    result = _child(tmp_path, "import ast, operator\n"
                              "from symgraph.backends.numba.runtime import lowering\n"
                              "lowering._BINARY[ast.Add] = operator.sub")
    assert result["lowered"]  # every internal is there...
    assert any("check failed" in w for w in result["warnings"]), result["warnings"]
    assert result["rows"] == lowered["rows"]  # ...but the kernels compiled without them
    assert result["floats"] == lowered["rows"]  # (value_grad_floats: plain.floats_python)
    assert result["batch"] == lowered["rows"]
    assert result["sums"] == lowered["sums"]


def test_lane_batches_agree_with_the_row_kernel(lowered):
    batch = np.array([float.fromhex(v) for v in lowered["batch"]])
    rows = np.array([float.fromhex(v) for v in lowered["rows"]])
    assert lowered["batch"] != lowered["rows"]  # vecmath and libm round differently...
    assert np.allclose(batch, rows, rtol=1e-14, atol=1e-300, equal_nan=True)  # ...by an ulp


def test_a_change_of_the_runtime_gives_a_new_module_file(tmp_path, monkeypatch, lowered):
    fn = lowered["fn"]
    source = fn.source
    digest = numba_cache.runtime_digest()
    assert f"# runtime {digest}" in source
    path = load_source(source, tmp_path)[1]
    copies = []
    for original in numba_cache.runtime_files():  # the runtime with one file edited
        copy = tmp_path / "runtime" / original.name
        copy.parent.mkdir(exist_ok=True)
        copy.write_bytes(original.read_bytes() + (b"# edited\n" if "lowering" in copy.name
                                                  else b""))
        copies.append(copy)
    monkeypatch.setattr(numba_cache, "runtime_files", lambda: copies)
    numba_cache.runtime_digest.cache_clear()
    try:
        edited = numba_cache.runtime_digest()
        assert edited != digest
        again = sg.compile(fn.outputs[0], fn.args, cache_dir=tmp_path)
        assert f"# runtime {edited}" in again.source
        assert again.path != path and again.path.parent == path.parent
    finally:
        numba_cache.runtime_digest.cache_clear()


def test_runtime_digest_covers_the_lowering_claims_lanes_adapter_vecmath_and_simd():
    names = {path.name for path in numba_cache.runtime_files()}
    assert {"__init__.py", "lowering.py", "lanes.py", "claims.py", "plain.py", "probe.py",
            "vecmath.py", "simd.py"} <= names  # simd: which packs run SIMD on this CPU
    # every vecmath module (the lowering inlines their functions into the kernels)
    folder = numba_cache.runtime_files()[0].parent.parent
    assert {path.name for path in folder.glob("vecmath*.py")} <= names
    assert {"vecmath_trig.py", "vecmath_root.py", "deferred.py"} <= names


def test_only_the_runtime_adapter_imports_numbas_code_generation_internals():
    import ast
    from pathlib import Path

    package = Path(sg.__file__).resolve().parent
    adapter = package / "backends" / "numba" / "runtime"
    internals = ("numba.extending", "numba.core.cgutils", "llvmlite")
    users = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n.startswith(internals) for n in names):
                users.add(path)
    assert users and all(adapter in path.parents for path in users), sorted(users)


def _product_steps(_x, _out):
    a = _x[0]
    b = _x[1]
    t0 = a * b
    _out[0] = t0
    _out[1] = b
    _out[2] = a


@pytest.mark.parametrize("in_place", [True, False], ids=["float read in place", "C API"])
def test_real_numba_arguments_take_floats_and_ints_and_refuse_the_rest(monkeypatch, in_place):
    # runtime.real: an entry point's float arguments, unboxed as floats and ints only (an
    # exact float read in place where its layout checked out at import, else by the C API).
    import importlib

    from numba import njit

    real_module = importlib.import_module("symgraph.backends.numba.runtime.real")
    if not in_place:
        monkeypatch.setattr(real_module, "_LAYOUT", None)
    product = runtime.floats_line(_product_steps, 2)

    @njit  # (not cached: compiled with this test's layout)
    def kernel(a, b):
        return product((a, b))

    kernel.compile((runtime.real, runtime.real))
    entry = numba_cache.entry_point(kernel, (runtime.real, runtime.real))
    assert entry(2.5, 3) == (7.5, (3.0, 2.5))
    assert entry(np.float64(-0.0), True) == (-0.0, (1.0, -0.0))
    assert entry(2**60, 1.0) == (2.0**60, (1.0, 2.0**60))
    for bad in ("1.5", None, 1j, np.float32(1.0), np.array(1.0), np.array([1.0])):
        with pytest.raises(TypeError):
            entry(bad, 1.0)
    with pytest.raises(OverflowError):
        entry(10**400, 1.0)
