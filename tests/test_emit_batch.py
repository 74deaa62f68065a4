"""Lane batch kernels (symgraph.backends.numba.batch) against the row kernel.

Without vecmath steps every non-NaN result must have the row kernel's exact bits (same IEEE
operations, no FMA contraction); where the row kernel gives NaN the batch gives NaN too (its
payload or sign may differ: IEEE 754 leaves them open). Lane code computes exp, log, sin...
with symgraph.backends.numba.vecmath, the row kernel with libm: both within an ulp of the true
value, so one such op agrees to an ulp, and whole programs to rounding. Points mix random
values with inf, nan, signed zeros, huge, subnormal and branch-boundary values; batch sizes hit
0, 1 and every block edge.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import os
import platform
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
from symgraph.backends.numba import vecmath as vm
from symgraph.backends.numba.batch import (
    ASINH_LIMIT,
    BLOCK,
    CHUNK,
    HYPERBOLIC_LIMIT,
    LIMITED,
    SIN_COS_LIMIT,
    batch_kernel_lines,
    lane_kernel_lines,
    segments,
    uses_lanes,
    vecmath_calls,
)
from symgraph.backends.registry import render_source
from symgraph.ir.node import apply, const
from symgraph.ir.ops import OPS
from symgraph.lower.programs import build_programs
from symgraph.runtime.loading import load_source
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
    "identity": lambda: (sg.symbols("x"), [sg.symbols("x")]),
    "constant": lambda: (const(2.5), []),
    "polynomial": corpus.polynomial,
    "linear_mse": lambda: corpus.linear_mse(6),
    "rosenbrock": lambda: corpus.rosenbrock(6),
    "rosenbrock9": lambda: corpus.rosenbrock(9),  # rows of 9 and 10: transposed copies
    "rosenbrock40": lambda: corpus.rosenbrock(40),  # and each next block's rows prefetched
    "mlp": lambda: corpus.mlp(2, 3, 3),
    "black_scholes": corpus.black_scholes,
    "nested": lambda: corpus.nested(12),
    "random_dag": lambda: corpus.random_dag(120),
    "log_sum_exp": lambda: corpus.log_sum_exp(6),
    "product_chain": lambda: corpus.product_chain(15),
    "every_op": every_op,
}


# Chains of sin/exp/log scaled by y: a last-bit difference of a vecmath step grows by their
# condition number (~1e7 at the edge points), so vecmath and libm agree only on tame points.
CHAOTIC = {"nested"}
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


def assert_near(got: np.ndarray, ref: np.ndarray, rtol: float = 1e-12) -> None:
    """Equal but for rounding: a last-bit difference of a vecmath step spreads through what
    follows (relative to each column's scale); NaN, infinities and where they are, equal."""
    assert np.array_equal(np.isnan(got), np.isnan(ref)), "NaN in different places"
    finite = np.isfinite(ref)
    assert np.array_equal(got[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)])
    scale = np.max(np.where(finite, np.abs(ref), 0.0), axis=0, initial=0.0)
    np.testing.assert_allclose(np.where(finite, got, 0.0), np.where(finite, ref, 0.0),
                               rtol=rtol, atol=rtol * scale.max(initial=0.0))


def uses_vecmath(p) -> bool:
    return bool(vecmath_calls("\n".join(lane_kernel_lines(p))))


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
def test_lane_batch_equals_row_kernel(name, use_kernel):
    # Bit for bit without vecmath steps, to rounding with them.
    use_kernel(lane_kernel_lines)  # lanes for every program, whatever its size
    built = CASES[name]()
    module, programs = lane_module(built, hessian=name in WITH_HESSIAN)
    n = len(built[1])
    X = points(n, max(SIZES), seed=len(name))
    if name in CHAOTIC:  # to rounding only where rounding differences stay small
        X = np.random.default_rng(1).uniform(0.2, 1.5, X.shape)
    for p in programs:
        row, batch = getattr(module, p.name + "_row"), getattr(module, p.name + "_batch")
        ref = np.empty((X.shape[0], len(p.outputs)))
        for i in range(X.shape[0]):
            row(X[i], ref[i])
        for size in SIZES:
            out = np.full((size, len(p.outputs)), 12345.0)
            batch(X[:size], out)
            (assert_near if uses_vecmath(p) else assert_same_bits)(out, ref[:size])


def test_batch_kernel_choice_and_the_api_on_awkward_inputs(use_kernel):
    # Programs without a vector step keep the per-point loop over the row kernel; any other
    # gets lanes, tiny ones too (the polynomial's 3 steps), and wide rows a smaller block.
    x, y = sg.symbols("x y")
    expr, args = corpus.polynomial()
    assert uses_lanes(build_programs([expr], args, args, True, False)[1])
    assert not uses_lanes(build_programs([apply("erfc", x)], [x], [x], False, False)[0])
    wide = sg.symbols(" ".join(f"w{k}" for k in range(150)))
    p = build_programs([apply("add", *[w * w for w in wide])], wide, wide, True, False)[1]
    assert uses_lanes(p) and "block=16" in "\n".join(batch_kernel_lines(p))
    expr = apply("add", *[(x * k + y) ** 2 / (1 + y * y) for k in range(1, 12)]) + apply(
        "erfc", x * y)  # libm in lanes too (no vecmath form): batches equal rows bit for bit
    mid = build_programs([expr], [x, y], [x, y], True, False)[1]
    assert uses_lanes(mid) and "_lanes(" in "\n".join(batch_kernel_lines(mid))
    assert len(segments(mid)) >= 2  # the erfc call runs in a segment of its own

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
        from symgraph.lower.programs import build_programs
        from symgraph.backends.numba.batch import lane_kernel_lines
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


def assert_dependency_order(order, p, steps=None) -> None:
    steps = p.steps if steps is None else steps  # (few_live's: its run `chained`)
    assert sorted(s.target for s in order) == sorted(s.target for s in steps)
    done = set(p.inputs)
    targets = {s.target for s in steps}
    for s in order:
        for o in s.operands:
            assert o.value not in targets or o.value in done
        done.add(s.target)


def test_segments_respect_dependencies_and_keep_every_step():
    expr, args = corpus.random_dag(120)
    for p in build_programs([expr], args, args, True, True):
        assert_dependency_order([s for run in segments(p) for s in run], p)


def test_long_segments_are_reordered_for_fewer_live_values_and_cut_short(monkeypatch):
    # A gradient in program order keeps its whole forward sweep alive into the backward one;
    # few_live's list schedule keeps fewer values alive, and cut_run's loops respect the
    # bound, in an order that still respects every dependency.
    monkeypatch.setattr(order, "LOOP_STEPS", 40)
    monkeypatch.setattr(order, "CUT_ABOVE", 40)
    mu, ls = sg.symbols("mu ls")
    expr = apply("add", *[((0.1 * k - mu) * sg.exp(-ls)) ** 2 + ls for k in range(60)])
    p = build_programs([expr], [mu, ls], [mu, ls], True, False)[1]
    [run] = segments(p)
    steps = order.few_live(run, p)
    assert_dependency_order(steps, p, order.chained(run))
    # (78 alive at the widest against 123 in program order; 182 before ad.factoring took
    # exp(-ls) out of d/dmu's sum, which made program order itself narrower)
    assert max(order.crossings(steps, p)) < 0.7 * max(order.crossings(run, p))
    pieces = order.cut_run(steps, p)
    assert len(pieces) > 3 and max(map(len, pieces)) <= 40
    assert [s for piece in pieces for s in piece] == steps


def test_wide_sums_are_chained_left_to_right_and_added_to_as_their_terms_are_made(use_kernel):
    # A gradient's sums over 40 terms: program order keeps every term alive until the sum;
    # few_live chains each sum (the same additions, in the same order: the row kernel's
    # bits) and its list schedule adds each term soon after it is made, so far fewer values
    # are alive at once, and the lane kernel still gives the row kernel's results exactly.
    use_kernel(lane_kernel_lines)
    mu, ls = sg.symbols("mu ls")
    expr = apply("add", *[((0.05 * k - mu) * (1 + ls * ls)) ** 2 for k in range(40)])
    module, programs = lane_module((expr, [mu, ls]), hessian=False)
    p = programs[1]
    [run] = segments(p)
    wide = [s for s in run if s.op == "add" and len(s.operands) > order.CHAIN_ABOVE]
    links = order.chained(run)
    assert wide and len(links) == len(run) + sum(len(s.operands) - 2 for s in wide)
    for s in wide:  # each link adds the next operand to the one before, ending at the target
        chain = [link for link in links if link.target.startswith(f"_{s.target}_")]
        assert [link.operands[1] for link in chain] == list(s.operands[1:-1])
        assert chain[0].operands[0] == s.operands[0]
    steps = order.few_live(run, p)
    assert_dependency_order(steps, p, links)
    assert max(order.crossings(steps, p)) < 0.6 * max(order.crossings(run, p))  # (44 and 83)
    X = points(2, 2 * BLOCK + 5, seed=5)
    ref = np.empty((X.shape[0], len(p.outputs)))
    for i in range(X.shape[0]):
        module.value_grad_row(X[i], ref[i])
    out = np.full_like(ref, 12345.0)
    module.value_grad_batch(X, out)
    assert_same_bits(out, ref)


def test_a_short_run_is_reordered_only_where_that_keeps_far_fewer_values_alive(monkeypatch):
    # Below CUT_ABOVE steps, the list schedule is taken only when it keeps at most
    # WORTH_REORDERING of program order's values alive: it moves costly steps away from the
    # work that hid their latency (held-out rational@14: 0.91 as many, 13-19% slower).
    mu, ls = sg.symbols("mu ls")
    expr = apply("add", *[((0.05 * k - mu) * (1 + ls * ls)) ** 2 for k in range(40)])
    p = build_programs([expr], [mu, ls], [mu, ls], True, False)[1]
    [run] = segments(p)
    links = order.chained(run)
    share = (sum(order.crossings(order._greedy(links, p), p))
             / sum(order.crossings(links, p)))
    assert len(run) <= order.CUT_ABOVE and share < order.WORTH_REORDERING
    assert order.few_live(run, p) != run
    monkeypatch.setattr(order, "WORTH_REORDERING", share * 0.99)
    assert order.few_live(run, p) is run


def test_short_runs_that_spill_nothing_keep_program_order():
    # Reordering a run whose program order fits in the registers only perturbs LLVM's own
    # schedule (coulomb@2: 3.05 -> 4.11 ns a point when 3 steps moved).
    x, y = sg.symbols("x y")
    p = build_programs([x * y + sg.sin(x) * 2 + y * y * 3 + x], [x, y], [x, y], True, False)[1]
    for run in segments(p):
        assert order.few_live(run, p) is run


def _angles():
    """Bond-angle-like terms: hypot and atan2 but no special function, so the atan2 fix-up
    loop, whose row steps call libm's hypot (Numba compiles it as a helper), is a part's."""
    x, y, z = sg.symbols("x y z")
    terms = [sg.atan2(x * (1 + k / 9) - y, sg.hypot(y, z + k / 7)) for k in range(8)]
    return apply("add", *terms), [x, y, z]


@pytest.mark.parametrize("name", ["every_op", "rosenbrock9", "angles"])
def test_chunked_lane_kernel_equals_row_kernel(name, use_kernel, monkeypatch):
    # A big program's lane kernel: long segments cut into loops, loops grouped into functions
    # of their own (`parts=`; a loop calling a special function stays in the kernel's own),
    # here at tiny bounds so that a small program has several of each: bit for bit the row
    # kernel's results without vecmath steps (rosenbrock9: transposed copies of wide rows),
    # to rounding with them (every_op: every op, the sin/cos fix-up loop too).
    monkeypatch.setattr(order, "LOOP_STEPS", 6)
    monkeypatch.setattr(order, "CUT_ABOVE", 6)
    monkeypatch.setattr(batch_module, "PART_STEPS", 15)
    monkeypatch.setattr(batch_module, "PARTS_ABOVE", 15)
    use_kernel(lane_kernel_lines)
    built = _angles() if name == "angles" else CASES[name]()
    module, programs = lane_module(built, hessian=False)
    p = programs[1]
    assert "parts=(0, " in "\n".join(lane_kernel_lines(p))
    X = points(len(built[1]), 2 * BLOCK + 5, seed=3)
    row, batch = module.value_grad_row, module.value_grad_batch
    ref = np.empty((X.shape[0], len(p.outputs)))
    for i in range(X.shape[0]):
        row(X[i], ref[i])
    out = np.full_like(ref, 12345.0)
    batch(X, out)
    (assert_near if uses_vecmath(p) else assert_same_bits)(out, ref)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 assembly")
@pytest.mark.parametrize("name", ["rosenbrock", "black_scholes"])
def test_lane_loops_vectorise_without_fma_contraction(name, use_kernel):
    # _lane_loops writes plain counted loops: LLVM vectorises them (packed multiplies), and
    # without fastmath it never contracts a*b + c into an FMA (which would change the bits):
    # no fast-math flag allows it in the IR. Fused multiply-adds are only those vecmath
    # writes (`_fma`, `_mul_error`: llvm.fma), so Rosenbrock, which calls none, has none.
    # Black-Scholes' one loop holds its exp, log and erf: inlined vecmath vectorises with it,
    # its FMAs in the vector loop and its scalar remainder (and twice more where a block runs
    # as two interleaved halves: batch.latency_bound) for each call of the functions it inlines.
    use_kernel(lane_kernel_lines)
    expr, args = CASES[name]()
    module, programs = lane_module((expr, args), hessian=False)
    X = points(len(args), 100, seed=3)
    module.value_grad_batch(X, np.empty((100, len(programs[1].outputs))))
    asm = "\n".join(module.value_grad_chunks.inspect_asm().values())
    llvm = "\n".join(module.value_grad_chunks.inspect_llvm().values())
    assert not re.search(r"\b(contract|fast|reassoc|afn)\b", llvm) and "fmuladd" not in llvm
    fmas = len(re.findall(r"\bvf\w*m(?:add|sub)\w*", asm))
    copies = 4 if "interleave=" in "\n".join(lane_kernel_lines(programs[1])) else 2
    assert "mulpd" in asm and fmas <= copies * explicit_fmas(programs[1])
    if name == "rosenbrock":
        assert fmas == 0 and "llvm.fma" not in llvm
    else:
        assert "llvm.fma" in llvm  # (vecmath's exp polynomial)


def _cosh_chain(links: int = 14):
    u = sg.symbols(" ".join(f"u{k}" for k in range(links + 1)))
    return apply("add", *[(1 + 0.1 * k) * sg.cosh(u[k + 1] - u[k]) for k in range(links)]), list(u)


def test_a_lane_loop_sets_a_points_flag_once_for_all_its_range_tests():
    # One `_F[_j] |= (a or b ...)` a loop, never one statement a test (see batch.flag_lines).
    expr, args = _cosh_chain()
    lines = lane_kernel_lines(build_programs([expr], args, args, True, False)[1])
    source = "\n".join(lines)
    tree = ast.parse(source)
    loops = [node for node in ast.walk(tree) if isinstance(node, ast.For)]
    flags = [sum(isinstance(st, ast.AugAssign) for st in loop.body) for loop in loops]
    assert max(flags) == 1 and source.count("abs(") == 14  # cosh, sinh of one argument: one test
    assert all(len(line) <= 100 for line in lines if "_F[_j] |=" in line or " or abs(" in line)


AVX2_CHILD = textwrap.dedent("""
    import re, sys
    import numpy as np
    from symgraph.lower.programs import build_programs
    from symgraph.backends.registry import render_source
    from symgraph.runtime.loading import load_source
    from tests.test_emit_batch import _cosh_chain
    expr, args = _cosh_chain()
    programs = build_programs([expr], args, args, True, False)
    module, _ = load_source(render_source(programs, [expr], args, "numba"), sys.argv[1])
    X = np.random.default_rng(1).uniform(-1.0, 1.0, (200, len(args)))
    module.value_grad_batch(X, np.empty((200, len(programs[1].outputs))))
    asm = "\\n".join(module.value_grad_chunks.inspect_asm().values())
    print(len(re.findall(r"vdivpd\\s+%ymm", asm)), len(re.findall(r"zmm", asm)))
""")


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 assembly")
def test_a_loop_with_many_range_tests_vectorises_for_avx2(tmp_path):
    # The cosh/sinh pairs' division, packed 4 doubles a ymm register, for a CPU with AVX2 and
    # no AVX-512 (Zen 3's features, the host's own cache folder apart): with a flag statement
    # a test, LLVM left this loop scalar for AVX2 (catenary_chain@20: 330 ns a point).
    import llvmlite.binding as llvm

    host = llvm.get_host_cpu_features()
    if not all(host.get(f) for f in ("avx2", "fma", "bmi", "bmi2", "lzcnt", "movbe", "f16c")):
        pytest.skip("the host cannot run code for Zen 3's features")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root, "NUMBA_CPU_NAME": "znver3",
           "NUMBA_CPU_FEATURES": "+64bit,+sse,+sse2,+sse3,+ssse3,+sse4.1,+sse4.2,+avx,+avx2,"
                                 "+fma,+cmov,+cx16,+popcnt,+f16c,+bmi,+bmi2,+lzcnt,+movbe,"
                                 "-avx512f,-avx512dq,-avx512vl,-avx512bw,-avx512cd",
           "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    child = subprocess.run([sys.executable, "-c", AVX2_CHILD, str(tmp_path)], env=env,
                           cwd=root, capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-2000:]
    packed_divides, zmm = map(int, child.stdout.split())
    assert zmm == 0 and packed_divides >= 14  # (8 links vectorised either way)


def test_interleaved_half_blocks_give_the_bits_of_one_loop(use_kernel):
    # A small segment with vecmath calls runs a block as two interleaved halves (a batch's
    # last, partial block as one loop): the same operations on the same operands, so the same
    # bits as the plain loop, at every batch size.
    use_kernel(lane_kernel_lines)
    expr, args = corpus.black_scholes()
    programs = build_programs([expr], args, args, True, False)
    source = render_source(programs, [expr], args, "numba")
    assert "interleave=(" in source
    plain, _ = load_source(re.sub(r", interleave=\([0-9, ]*\)", "", source))
    halves, _ = load_source(source)
    X = np.abs(points(len(args), max(SIZES), seed=11)) + 0.1
    width = len(programs[1].outputs)
    for size in SIZES:
        want, got = np.empty((size, width)), np.empty((size, width))
        plain.value_grad_batch(X[:size], want)
        halves.value_grad_batch(X[:size], got)
        assert_same_bits(got, want)


def test_a_long_serial_chain_runs_interleaved_halves_and_a_wide_sum_of_its_cost_does_not():
    # Past INTERLEAVE_COST a segment is latency bound only as one serial chain (its critical
    # path SERIAL_SHARE of its cost or more): 24 nested steps, against 8 chains of 3.
    x, y = sg.symbols("x y")

    def chains(width: int, depth: int):
        outs = []
        for c in range(width):
            u = x + 0.1 * c
            for k in range(depth):
                u = y * (sg.sin(u) if k % 2 else sg.erf(u)) + x * (0.5 + 0.01 * k)
            outs.append(u)
        return apply("add", *outs)

    for width, depth, halves in ((1, 24, True), (8, 3, False)):
        program = build_programs([chains(width, depth)], [x, y], [x, y], True, False)[1]
        assert program.cost > batch_module.INTERLEAVE_COST
        assert ("interleave=(" in "\n".join(lane_kernel_lines(program))) == halves, width


def test_a_serial_chain_with_many_slots_keeps_bigger_blocks_for_its_interleaved_halves(
        monkeypatch):
    # A chain of 80 nested tanh steps keeps ~100 values for its gradient: past SLOT_BYTES at
    # 64 points a block, within SERIAL_SLOT_BYTES, so its halves stay 4 AVX-512 vectors.
    x, y = sg.symbols("x y")
    u = x
    for k in range(80):
        u = y * sg.tanh(u) + x * (0.5 + 0.01 * k)
    program = build_programs([u], [x, y], [x, y], True, False)[1]

    def block() -> int:
        source = "\n".join(lane_kernel_lines(program))
        assert "interleave=(" in source
        return int(re.search(r"block=(\d+)", source).group(1))

    assert block() == 64
    monkeypatch.setattr(batch_module, "SERIAL_SLOT_BYTES", batch_module.SLOT_BYTES)
    assert block() == 32  # as every other kernel of its slots


def explicit_fmas(p) -> int:
    """`_mul_error` and `_fma` calls the lane code of `p` makes through the vecmath functions
    it inlines (every call counted: each is inlined)."""
    calls = re.compile(r"\b(_?v?[a-z][a-z0-9_]*)\(")

    def fmas(name: str, names: dict) -> int:  # `names`: the caller's module's (as lowered)
        function = names.get(name)
        if not hasattr(function, "py_func"):
            return int(name in ("_mul_error", "_fma"))
        source = inspect.getsource(function.py_func)
        body = source[source.index("\n", source.index("def ")):].split('"""')[-1]
        return sum(fmas(called, function.py_func.__globals__) for called in calls.findall(body))

    return sum(fmas(name, {name: getattr(vm, name)})
               for name in calls.findall("\n".join(lane_kernel_lines(p))) if hasattr(vm, name))


@pytest.mark.parametrize("built", [corpus.rosenbrock(10), corpus.linear_mse(6)],
                         ids=["rosenbrock10", "linear_mse"])
def test_lane_loops_copy_rows_without_gathers_or_scatters(built, use_kernel):
    # Rows of up to MAX_CONSTANT_WIDTH columns are copied with interleaved vector loads and
    # stores; wider rows (10 and 11 here) with scalar moves. Had LLVM learned a wide row's
    # exact length, it would copy with gathers and scatters: Rosenbrock-10 took 4x as long.
    use_kernel(lane_kernel_lines)
    expr, args = built
    module, programs = lane_module((expr, args), hessian=False)
    X = points(len(args), 100, seed=4)
    module.value_grad_batch(X, np.empty((100, len(programs[1].outputs))))
    asm = "\n".join(module.value_grad_chunks.inspect_asm().values())
    assert "gather" not in asm and "scatter" not in asm


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 instructions")
def test_rows_of_many_inputs_prefetch_the_next_block_and_narrower_rows_do_not(use_kernel):
    # A hint a cache line of the next block's inputs (runtime.lanes.PREFETCH_COLUMNS), read
    # only: the results are the row kernel's (test_lane_batch_equals_row_kernel, rosenbrock40).
    use_kernel(lane_kernel_lines)
    for n, wanted in ((40, True), (10, False)):
        expr, args = corpus.rosenbrock(n)
        module, programs = lane_module((expr, args), hessian=False)
        X = points(len(args), 100, seed=4)
        module.value_grad_batch(X, np.empty((100, len(programs[1].outputs))))
        asm = "\n".join(module.value_grad_chunks.inspect_asm().values())
        assert ("prefetcht1" in asm) is wanted and "prefetchw" not in asm


# -- vecmath in lane kernels ---------------------------------------------------------------------

LANE_OPS = sorted(name for name, spec in OPS.items() if spec.lanes is not None)


def test_ops_with_a_vecmath_form_are_vector_steps_and_sin_cos_limit_is_vecmaths():
    assert set(LANE_OPS) >= {"exp", "log", "tanh", "erf", "sigmoid", "expm1", "log1p", "sin",
                             "cos", "sinh", "cosh", "asinh"}
    assert SIN_COS_LIMIT == vm.SIN_COS_LIMIT and HYPERBOLIC_LIMIT == vm.HYPERBOLIC_LIMIT
    assert ASINH_LIMIT == vm.ASINH_LIMIT
    from symgraph.backends.tape.opcodes import RANGE_LIMITED  # the tape's names: the same limits
    assert {f: getattr(vm, name) for f, name in RANGE_LIMITED.items()} == batch_module.RANGE_LIMITS
    expr, args = corpus.black_scholes()
    for p in build_programs([expr], args, args, True, False):
        assert uses_lanes(p) and len(segments(p)) == 1  # no scalar libm segment left


@pytest.mark.parametrize("op", LANE_OPS)
def test_each_vecmath_step_is_within_an_ulp_of_the_row_kernel(op, use_kernel):
    # Faithful rounding on both sides: equal or neighbours; nan, inf and signed zeros equal.
    # The lowering inlines vecmath's Python text: its numbers are those of the @njit functions.
    # Two operands (pow, atan2, hypot): a second column; points outside vpow's range (x <= 0,
    # |y log x| > POW_LIMIT, inf, nan) or vatan2's (zeros, inf, nan) are recomputed with libm.
    use_kernel(lane_kernel_lines)
    x, y, z = sg.symbols("x y z")
    args = [x, y, z][:OPS[op].arity]
    module, _ = lane_module((apply(op, *args), args), hessian=False)
    rng = np.random.default_rng(len(op))
    X = np.concatenate([rng.normal(0.0, 3.0, 3000), rng.uniform(-750.0, 750.0, 1000),
                        10.0 ** rng.uniform(-310.0, 7.5, 1000) * rng.choice([-1.0, 1.0], 1000),
                        EDGES, [SIN_COS_LIMIT, -SIN_COS_LIMIT]])[:, None]
    if op in ("sin", "cos"):  # farther out, whole chunks run on libm (the next test)
        X = X[~(np.abs(X[:, 0]) > SIN_COS_LIMIT)]
    if len(args) >= 2:
        X = np.c_[np.abs(X[:, 0]) if op == "pow" else X[:, 0], rng.permutation(X[:, 0]) / 50]
        X[::7, 0] *= -1.0  # negative bases: integer exponents give numbers, others nan
        X[::11, 1] = np.round(X[::11, 1])
    if len(args) == 3:  # pow_prev(x, y, p): p = x**y (0, subnormal, inf, nan too), or any p
        with np.errstate(all="ignore"):
            X = np.c_[X, np.power(X[:, 0], X[:, 1])]
        X[::5, 2] = rng.permutation(X[:, 0])[::5]
    lanes, rows = np.empty((X.shape[0], 1)), np.empty((X.shape[0], 1))
    module.value_batch(X, lanes)
    for i in range(X.shape[0]):
        module.value_row(X[i], rows[i])
    special = ~np.isfinite(rows) | (rows == 0.0)
    assert np.array_equal(np.isnan(lanes), np.isnan(rows))
    assert np.array_equal(lanes[special & ~np.isnan(rows)], rows[special & ~np.isnan(rows)])
    assert np.array_equal(np.signbit(lanes[rows == 0.0]), np.signbit(rows[rows == 0.0]))
    names = ["x", "y", "z"][:len(args)]
    code = OPS[op].render("lanes", names)
    single = code == f"{vecmath_calls(code)[0]}({', '.join(names)})"  # else a formula (sigmoid)
    # glibc's tanh errs by up to 2 ulp and its atanh by 1.56 (vecmath's < 1 ulp against mpmath:
    # test_vecmath); so do sigmoid's, exp then two roundings, and xlogy's, log then a product,
    # on both sides (test_vecmath).
    np.testing.assert_array_max_ulp(
        lanes[~special], rows[~special],
        maxulp=1 if single and op not in ("tanh", "atanh", "sigmoid", "xlogy") else 2)
    limited = vecmath_calls(code)[0] in LIMITED
    if single and not limited:  # the same bits as vecmath's own compiled function
        name = vecmath_calls(code)[0]
        ours = np.array([getattr(vm, name)(*v) for v in X])
        assert_same_bits(lanes[:, 0], ours)
    flagged = limited and LIMITED[vecmath_calls(code)[0]].startswith("v")  # vpowoff(...)
    if single and flagged:  # pow, atan2, pow_prev, lgamma, digamma: the row kernel's bits
        name = vecmath_calls(code)[0]  # (libm's, special's) where the flag (on the operands
        flag = getattr(vm, LIMITED[name].split("(")[0])  # it takes) is set, else vecmath's
        off = np.array([flag(*v[len(args) - flag.py_func.__code__.co_argcount:]) for v in X])
        assert 0 < off.sum() < off.size
        assert_same_bits(lanes[off, 0], rows[off, 0])
        assert_same_bits(lanes[~off, 0], np.array([getattr(vm, name)(*v) for v in X[~off]]))


def test_sin_cos_beyond_vecmaths_exact_range_equal_libm(use_kernel):
    # A point with a sin/cos argument beyond SIN_COS_LIMIT (or inf) is recomputed with the row
    # kernel's steps: libm's numbers, bit for bit, however far out, and whatever its batch.
    use_kernel(lane_kernel_lines)
    x, y = sg.symbols("x y")
    module, programs = lane_module((sg.sin(x) * sg.cos(x * y) + sg.exp(y), [x, y]), False)
    X = np.random.default_rng(5).normal(0.0, 2.0, (CHUNK + 100, 2))
    far = [SIN_COS_LIMIT * 1.0000001, -1e9, 1e22, 1.7e308, math.inf, -math.inf, math.nan]
    rows = np.arange(len(far)) * 9 + BLOCK - 3  # across a block edge
    X[rows, 0] = far
    X[rows + 1, 1] = 1e300  # x * y far out, x not
    flagged = np.r_[rows, rows + 1]
    for p in programs:
        row, batch = getattr(module, p.name + "_row"), getattr(module, p.name + "_batch")
        ref = np.empty((X.shape[0], len(p.outputs)))
        for i in range(X.shape[0]):
            row(X[i], ref[i])
        out = np.empty_like(ref)
        batch(X, out)
        assert_same_bits(out[flagged], ref[flagged])
        assert_near(out, ref)
        for i in flagged[::3]:  # the same bits alone as in any batch
            alone = np.empty((1, len(p.outputs)))
            batch(X[i : i + 1], alone)
            assert_same_bits(alone[0], out[i])
    r = rows[2]  # x = 1e22: the value is what Python's math (libm) says
    value = np.empty((1, 1))
    module.value_batch(X[r : r + 1], value)
    assert value[0, 0] == math.sin(1e22) * math.cos(1e22 * X[r, 1]) + math.exp(X[r, 1])


def test_sinh_cosh_asinh_beyond_vecmaths_range_equal_libm(use_kernel):
    # Past HYPERBOLIC_LIMIT (exp overflows at 709.78, cosh only at 710.48) and ASINH_LIMIT a
    # point is recomputed with the row's steps: libm's numbers, bit for bit, finite up to its
    # overflow.
    use_kernel(lane_kernel_lines)
    x, y = sg.symbols("x y")
    module, programs = lane_module((sg.cosh(x) * y + sg.sinh(x * y) + sg.asinh(x * 1e148),
                                    [x, y]), False)
    X = np.random.default_rng(6).normal(0.0, 2.0, (CHUNK + 100, 2))
    far = [709.5, -709.9, 710.4, 711.0, 1e300, math.inf, -math.inf]
    rows = np.arange(len(far)) * 9 + BLOCK - 3  # across a block edge
    X[rows, 0] = far
    X[rows, 1] = 1.0
    for p in programs:
        row, batch = getattr(module, p.name + "_row"), getattr(module, p.name + "_batch")
        ref = np.empty((X.shape[0], len(p.outputs)))
        for i in range(X.shape[0]):
            with np.errstate(all="ignore"):
                row(X[i], ref[i])
        out = np.empty_like(ref)
        batch(X, out)
        assert_same_bits(out[rows], ref[rows])
        assert_near(out, ref)
    value = np.empty((1, 1))
    module.value_batch(X[rows[0] : rows[0] + 1], value)
    assert math.isclose(value[0, 0], math.cosh(709.5) + math.sinh(709.5), rel_tol=1e-15)


CHILD = textwrap.dedent("""
    import importlib.util, json, sys
    sys.modules["symgraph"] = None  # a standalone file must never need symgraph
    import numpy as np
    spec = importlib.util.spec_from_file_location("generated", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    X = np.array([[0.5, 1.5], [2.0, -1.0], [1e9, 0.25]] * 40)
    out = np.empty((len(X), 3))
    module.value_grad_batch(X, out)
    print(json.dumps([v.hex() for v in out[:3].ravel()]))
""")


def test_lane_modules_import_vecmath_from_the_runtime_and_standalone_ones_need_no_symgraph(
        tmp_path):
    x, y = sg.symbols("x y")
    expr = apply("add", *[sg.exp(x * k) * sg.sin(y + k) + sg.erf(x - y * k) for k in range(5)])
    fn = sg.compile(expr, [x, y])
    source = fn.source
    assert "_lanes(" in source and "vexp(" in source
    assert not any(f"def {name}(" in source for name in vm.PUBLIC)  # vecmath is imported
    assert "def _" not in source and "cgutils" not in source  # no lowering text
    imported = {getattr(node, "module", None) or alias.name for node in ast.walk(ast.parse(source))
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    assert imported == {"math", "numpy", "numba", "symgraph.backends.numba.runtime",
                        "symgraph.backends.numba.vecmath"}
    standalone = render_source(fn.programs, fn.outputs, fn.args, "numba", standalone=True)
    assert "symgraph" not in standalone.split('"""')[-1] and "_lanes" not in standalone
    path = tmp_path / "kernels.py"
    path.write_text(standalone)
    child = subprocess.run([sys.executable, "-I", "-c", CHILD, str(path)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    X = np.array([[0.5, 1.5], [2.0, -1.0], [1e9, 0.25]])
    rows = np.empty((3, 3))
    for i in range(3):  # the standalone batch is the row kernel on each row, bit for bit
        fn.module.value_grad_row(X[i], rows[i])
    assert json.loads(child.stdout) == [v.hex() for v in rows.ravel()]
