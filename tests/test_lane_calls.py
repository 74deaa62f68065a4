"""Big lane kernels call their vecmath steps (backends.numba.batch.calls_vecmath): each such step
is a loop of its own that calls a function the kernel's steps of one shape share
(runtime.lanes' `calls`). Oracles: the row kernel (libm), the uncalled lane kernel, the
optimised LLVM IR (functions defined once, calls left in place), a second process that loads
the kernel from Numba's cache and runs it on two threads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.numba import batch as batch_module
from symgraph.backends.numba import emit as emit_numba
from symgraph.backends.numba import order
from symgraph.backends.numba.batch import BLOCK, lane_kernel_lines, vecmath_step
from tests.test_emit_batch import CASES, _angles, assert_near, lane_module, points


@pytest.fixture
def use_kernel(monkeypatch):
    """Make emit_numba write batch kernels with `kernel`."""
    return lambda kernel: monkeypatch.setattr(emit_numba, "batch_kernel_lines", kernel)


def _repeated():
    """Eight exps and eight logs of one shape each (and their derivatives' arithmetic)."""
    x, y = sg.symbols("x y")
    return sum(sg.exp(x * (1 + k / 9)) * sg.log(y * y + 1 + k) for k in range(8)), [x, y]


@pytest.mark.parametrize("name", ["every_op", "angles", "repeated"])
def test_called_vecmath_lane_kernel_equals_row_kernel_and_inline_lanes(name, use_kernel,
                                                                      monkeypatch):
    # Every vecmath step called, in a kernel cut into loops and parts at tiny bounds: to
    # rounding the row kernel's results (every_op: every op, the sin/cos fix-up loop too), and
    # bit for bit the lane kernel that inlines the same vecmath functions.
    monkeypatch.setattr(order, "LOOP_STEPS", 6)
    monkeypatch.setattr(order, "CUT_ABOVE", 6)
    monkeypatch.setattr(batch_module, "PART_STEPS", 15)
    monkeypatch.setattr(batch_module, "PARTS_ABOVE", 15)
    use_kernel(lane_kernel_lines)
    built = {"angles": _angles, "repeated": _repeated}.get(name, CASES.get(name))()
    X = points(len(built[1]), 2 * BLOCK + 5, seed=4)
    if name == "repeated":
        X = np.random.default_rng(2).uniform(-3.0, 3.0, X.shape)
    results = {}
    for called in (False, True):
        monkeypatch.setattr(batch_module, "CALLS_ABOVE", 0 if called else 1 << 40)
        module, programs = lane_module(built, hessian=False)
        p = programs[1]
        text = "\n".join(lane_kernel_lines(p))
        assert ("calls=(" in text) == called
        out = np.full((X.shape[0], len(p.outputs)), 12345.0)
        module.value_grad_batch(X, out)
        results[called] = out
    ref = np.empty_like(results[True])
    for i in range(X.shape[0]):
        module.value_grad_row(X[i], ref[i])
    assert_near(results[True], ref)
    nan = np.isnan(results[False])
    assert np.array_equal(nan, np.isnan(results[True]))
    assert np.array_equal(results[True][~nan], results[False][~nan])


def test_called_lane_steps_of_one_shape_share_a_function_llvm_does_not_inline(use_kernel,
                                                                              monkeypatch):
    # 16 vecmath steps of few shapes: few functions in the optimised module, each called
    # where a step is (noinline: LLVM optimises a vecmath body once per shape).
    monkeypatch.setattr(batch_module, "CALLS_ABOVE", 0)
    use_kernel(lane_kernel_lines)
    module, programs = lane_module(_repeated(), hessian=False)
    p = programs[1]
    steps = sum(map(vecmath_step, p.steps))
    calls = re.search(r"calls=\(([^)]*)\)", "\n".join(lane_kernel_lines(p))).group(1)
    assert steps >= 16 and len(calls.split(",")) == steps
    X = points(2, 100, seed=1)
    module.value_grad_batch(X, np.empty((100, len(p.outputs))))
    llvm = "\n".join(module.value_grad_chunks.inspect_llvm().values())
    defined = re.findall(r"define internal (?:fastcc )?void @(\"?[^\s(]*\.calls\d+(?:\.\d+)?\"?)\(",
                         llvm)
    assert 1 <= len(defined) <= 6  # exp of x, of a slot, log of a slot (and so on)
    assert sum(len(re.findall(rf"call (?:fastcc )?void @{re.escape(f)}\(", llvm))
               for f in defined) == steps


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from symgraph.backends.numba import batch
    batch.CALLS_ABOVE = 0  # (what a big program gets)
    from symgraph.backends.numba import emit
    emit.batch_kernel_lines = batch.lane_kernel_lines
    from symgraph.backends.registry import render_source
    from symgraph.lower.programs import build_programs
    from symgraph.runtime.batching import run_shared
    from symgraph.runtime.loading import load_source
    from tests.test_lane_calls import _repeated
    expr, args = _repeated()
    programs = build_programs([expr], args, args, True, False)
    module, _ = load_source(render_source(programs, [expr], args, "numba"), sys.argv[1])
    X = np.random.default_rng(5).uniform(-2.0, 2.0, (50_000, 2))
    out = np.empty((X.shape[0], len(programs[1].outputs)))
    run_shared(module.value_grad_chunks, X, out, min_rows=1000)
    kernel = module.value_grad_chunks
    print(json.dumps({"hits": sum(kernel.stats.cache_hits.values()),
                      "misses": sum(kernel.stats.cache_misses.values()),
                      "out": out[::997].tolist()}))
""")


def test_called_lane_kernel_loads_from_numbas_cache_and_runs_on_threads(tmp_path):
    # A second process loads the kernel and its called functions from Numba's cache (no
    # compile) and gets the first one's numbers, the batch shared by two threads.
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "NUMBA_NUM_THREADS": "2"}
    runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], env=env,
                                      capture_output=True, text=True, check=True).stdout)
            for _ in range(2)]
    assert runs[0]["misses"] == 1 and runs[0]["hits"] == 0
    assert runs[1]["hits"] == 1 and runs[1]["misses"] == 0
    assert runs[0]["out"] == runs[1]["out"] and np.isfinite(runs[0]["out"]).all()
