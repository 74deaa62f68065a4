"""Lane batch kernels (symgraph.emit_numba_batch) against the row kernel, bit for bit.

Every non-NaN result must have the row kernel's exact bits (same IEEE operations, no FMA
contraction); where the row kernel gives NaN the batch gives NaN too (its payload or sign may
differ: IEEE 754 leaves them open). Points mix random values with inf, nan, signed zeros,
huge, subnormal and branch-boundary values; batch sizes hit 0, 1 and every block edge.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgraph as sg
from symgraph import emit_numba
from symgraph.api import build_programs, render_source
from symgraph.compiler import load_source
from symgraph.emit_numba_batch import (
    BLOCK,
    CHUNK,
    batch_kernel_lines,
    lane_kernel_lines,
    segments,
    uses_lanes,
)
from symgraph.graph import apply, const
from symgraph.ops import OPS
from tests import corpus

EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, -2.2e-308, 1.0,
         -1.0, 0.5, 22.0, -22.0, 2.0**-55, 700.0, -745.0, 3.0]
SIZES = [0, 1, 7, BLOCK - 1, BLOCK, BLOCK + 1, CHUNK + BLOCK + 3]


def every_op():
    """One expression that uses every op of the table (so its gradient uses their rules)."""
    x, y, z = sg.symbols("x y z")
    terms = []
    for name, spec in sorted(OPS.items()):
        args = [x, y, z][: spec.arity if spec.arity > 0 else 3]
        terms.append(apply(name, *args))
    terms += [x**2, y**3, z**-2, x**0.5, (x * y) ** -1, x**y]
    return apply("add", *terms), [x, y, z]


def outputs_without_steps():
    """Outputs that are an input (d(x*y)/dy = x), a literal (d(2x)/dx = 2) or NaN literals."""
    x, y, z = sg.symbols("x y z")
    return x * y + 2 * x + z * const(math.nan), [x, y, z]


CASES = {
    "outputs_without_steps": outputs_without_steps,
    "identity": lambda: (sg.symbols("x")[0], list(sg.symbols("x"))),
    "constant": lambda: (const(2.5), []),
    "polynomial": corpus.polynomial,
    "linear_mse": lambda: corpus.linear_mse(6),
    "rosenbrock": lambda: corpus.rosenbrock(6),
    "mlp": lambda: corpus.mlp(2, 3, 3),
    "black_scholes": corpus.black_scholes,
    "nested": lambda: corpus.nested(12),
    "random_dag": lambda: corpus.random_dag(120),
    "log_sum_exp": lambda: corpus.log_sum_exp(6),
    "product_chain": lambda: corpus.product_chain(15),
    "every_op": every_op,
}


WITH_HESSIAN = {"polynomial", "black_scholes", "every_op"}  # the others: value and gradient


def points(n_inputs: int, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(0.0, 2.0, (size, n_inputs))
    mask = rng.random((size, n_inputs)) < 0.15  # some coordinates at edge values
    X[mask] = rng.choice(EDGES, int(mask.sum()))
    return X


def assert_same_bits(got: np.ndarray, ref: np.ndarray) -> None:
    nan = np.isnan(ref)
    assert np.array_equal(nan, np.isnan(got)), "NaN in different places"
    same = got.view(np.uint64) == ref.view(np.uint64)
    bad = np.argwhere(~(same | nan))
    assert bad.size == 0, f"{len(bad)} results differ, first at {bad[0]}: {got[tuple(bad[0])]!r}"\
        f" != {ref[tuple(bad[0])]!r}"


@pytest.fixture
def use_kernel(monkeypatch):
    """Make emit_numba write batch kernels with `kernel` (before and after it is wired in)."""

    def patch(kernel):
        monkeypatch.setattr(emit_numba, "batch_kernel_lines", kernel)

    return patch


def lane_module(built, hessian: bool):
    expr, args = built
    programs = build_programs([expr], args, args, True, hessian)
    module, _ = load_source(render_source(programs, [expr], args, "numba"))
    return module, programs


@pytest.mark.parametrize("name", sorted(CASES))
def test_lane_batch_equals_row_kernel_bit_for_bit(name, use_kernel):
    use_kernel(lane_kernel_lines)  # lanes for every program, whatever its size
    built = CASES[name]()
    module, programs = lane_module(built, hessian=name in WITH_HESSIAN)
    n = len(built[1])
    X = points(n, max(SIZES), seed=len(name))
    for p in programs:
        row, batch = getattr(module, p.name + "_row"), getattr(module, p.name + "_batch")
        ref = np.empty((X.shape[0], len(p.outputs)))
        for i in range(X.shape[0]):
            row(X[i], ref[i])
        for size in SIZES:
            out = np.full((size, len(p.outputs)), 12345.0)
            batch(X[:size], out)
            assert_same_bits(out, ref[:size])


def test_batch_kernel_choice_and_the_api_on_awkward_inputs(use_kernel):
    # Tiny programs keep the per-point loop over the row kernel; mid-size ones get lanes.
    expr, args = corpus.polynomial()
    assert not uses_lanes(build_programs([expr], args, args, True, False)[1])
    x, y = sg.symbols("x y")
    expr = apply("add", *[(x * k + y) ** 2 / (1 + y * y) for k in range(1, 12)]) + sg.sin(x * y)
    mid = build_programs([expr], [x, y], [x, y], True, False)[1]
    assert uses_lanes(mid) and "_lanes(" in "\n".join(batch_kernel_lines(mid))
    assert len(segments(mid)) >= 2  # the sin call runs in a segment of its own

    use_kernel(batch_kernel_lines)
    fn = sg.compile(expr, [x, y])
    assert "_lanes(" in fn.source
    with np.errstate(over="ignore"):
        X32 = points(2, 300, seed=9).astype(np.float32)  # a wrong dtype the API converts
    X = X32.astype(np.float64)
    want = np.array([np.r_[fn.value_and_grad(*map(float, r))] for r in X])
    for variant in (X, np.asfortranarray(X), X32,
                    np.repeat(X, 2, axis=0)[::2], X.tolist()):
        values, grads = fn.value_and_grad(variant)
        assert_same_bits(np.c_[values, grads], want)
    values, grads = fn.value_and_grad(np.empty((0, 2)))
    assert values.shape == (0,) and grads.shape == (0, 2)
    ints = np.arange(10).reshape(5, 2)
    assert_same_bits(np.c_[fn.value_and_grad(ints)], np.c_[fn.value_and_grad(ints * 1.0)])


def test_lane_source_is_byte_identical_across_hash_seeds():
    script = textwrap.dedent("""
        from symgraph.api import build_programs
        from symgraph.emit_numba_batch import lane_kernel_lines
        from tests import corpus
        for built in (corpus.black_scholes(), corpus.mlp(2, 3, 3), corpus.random_dag(120)):
            expr, args = built
            for p in build_programs([expr], args, args, True, True):
                print("\\n".join(lane_kernel_lines(p)))
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": root}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                text=True, check=True, cwd=root)
        outputs.add(result.stdout)
    assert len(outputs) == 1 and "_T[" in outputs.pop()


def test_segments_respect_dependencies_and_keep_every_step():
    expr, args = corpus.random_dag(120)
    for p in build_programs([expr], args, args, True, True):
        order = [s for run in segments(p) for s in run]
        assert sorted(s.target for s in order) == sorted(s.target for s in p.steps)
        done = set(p.inputs)
        targets = {s.target for s in p.steps}
        for s in order:
            for o in s.operands:
                name = o.lstrip("-")
                assert name not in targets or name in done
            done.add(s.target)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 assembly")
def test_lane_loops_vectorise_without_fma_contraction(use_kernel):
    # _lane_loops writes plain counted loops: LLVM vectorises them (packed multiplies), and
    # without fastmath it never contracts a*b + c into an FMA (which would change the bits).
    use_kernel(lane_kernel_lines)
    expr, args = corpus.rosenbrock(6)
    module, programs = lane_module((expr, args), hessian=False)
    X = points(len(args), 100, seed=3)
    module.value_grad_batch(X, np.empty((100, len(programs[1].outputs))))
    asm = "\n".join(module.value_grad_batch.inspect_asm().values())
    assert "mulpd" in asm and "fmadd" not in asm and "fmsub" not in asm
