"""Generated code: deterministic, readable, one statement per node, and safe from any name."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.numba import vecmath
from symgraph.ir.node import apply
from symgraph.ir.ops import OPS
from symgraph.lower.naming import input_identifiers
from symgraph.lower.schedule import MAX_WIDTH, schedule

HOSTILE_NAMES = ["lambda", "np", "math", "t0", "f", "df_dx", "_x", "_out", "x; import os",
                 'a"""b', "x\nimport os", "2x", "θ", "print", "", "d2f_dx_dx", "__import__",
                 "out"]


def test_source_is_byte_identical_across_hash_seeds():
    script = textwrap.dedent("""
        import symgraph as sg
        x, y, z = sg.symbols("x y z")
        f = sg.exp(x * y) + sg.sin(z) * x + sg.hypot(y, z) / (1 + x**2) + sg.where(x > y, z, x)
        for backend in ("python", "numba"):
            print(sg.compile(f, hessian=True, backend=backend).source)
    """)
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                text=True, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1


def test_hostile_symbol_names_become_distinct_safe_identifiers():
    names = [n for n in HOSTILE_NAMES if n]
    idents = input_identifiers(names)
    assert len(set(idents)) == len(idents)
    for ident in idents:
        assert ident.isidentifier() and ident.isascii()
        assert ident not in {"lambda", "np", "math", "t0", "f", "df_dx", "print"}
        assert not ident.startswith("_")


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_kernels_over_hostile_names_compile_and_compute_correctly(backend):
    syms = [sg.symbol(n) for n in HOSTILE_NAMES if n]
    expr = sg.add(*[(i + 1) * s for i, s in enumerate(syms)]) * syms[0]
    fn = sg.compile(expr, syms, backend=backend)
    point = [1.0] * len(syms)
    value, gradient = fn.value_and_grad(point)
    total = sum(range(1, len(syms) + 1))
    assert value == total
    floats = fn.value_and_grad(*point)  # (the one-point function unpacks them by name)
    assert floats[0] == value and floats[1].tolist() == gradient.tolist()
    assert gradient[0] == total + 1 and gradient[1] == 2.0
    tree = ast.parse(fn.source)
    imported = {alias.name for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    assert imported <= {"math", "numpy", "njit", "fetch_add", "load_acquire", "straight_line",
                        "point_line", "floats_line", "lane_loops",
                        *vecmath.PUBLIC}  # no name became a statement


def test_one_statement_per_node_and_wide_sums_are_split():
    xs = [sg.symbol(f"x{i}") for i in range(1000)]
    total = sg.add(*[s * s for s in xs])
    program = schedule("value", [("f", total)], xs, [s.value for s in xs])
    assert all(len(step.operands) <= MAX_WIDTH for step in program.steps)
    fn = sg.compile(total, xs, backend="python")
    assert fn(list(range(1000))) == float(sum(i * i for i in range(1000)))


def test_dead_nodes_are_dropped_and_shared_nodes_computed_once():
    x, y = sg.symbols("x y")
    shared = sg.exp(x * y)
    program = schedule("value", [("f0", shared + 1), ("f1", shared * 2)], [x, y], ["x", "y"])
    ops = [step.op for step in program.steps]
    assert ops.count("exp") == 1 and ops.count("mul") == 2  # x*y and shared*2


def test_python_source_reads_like_the_math():
    x = sg.symbols("x")
    source = sg.compile(x**2 + 2 * x + 1, [x], backend="python").source
    assert "f = x**2 + 2*x + 1" in source
    assert "t0 = x * x" in source
    assert "df_dx = t1 + 2.0" in source


def _numba_twins(expr, args):
    """The row kernel as compiled (steps lowered by the intrinsic) and a plain @njit of the same
    steps function: Numba's own front end, the reference for the machine code's numbers."""
    from numba import njit

    from symgraph.backends.numba import packs

    with pytest.MonkeyPatch.context() as m:  # no packs: their vecmath calls are within an ulp
        m.setattr(packs, "MIN_MEMBERS", 10**9)  # of libm's (tests/test_point_packs.py)
        fn = sg.compile(expr, args)
        reference = njit(error_model="numpy")(fn.module.value_grad_steps)  # (made here)

    def point(x, out):  # the one-point kernel (the steps lowered for a tuple of floats)
        out[0], out[1:] = fn.value_and_grad(*x.tolist())

    return [fn.module.value_grad_row, point], reference, 1 + len(args)


EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e300, -1e300, 1e-310, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("op", sorted(OPS))
def test_lowered_steps_give_the_bits_of_numbas_own_compile_for_every_op(op):
    # (in the row kernel, and in the point kernel a call with floats runs)
    spec = OPS[op]
    arity = 2 if spec.arity < 0 else spec.arity
    args = sg.symbols("a b c")[:arity]
    expressions = [apply(op, *args)]
    if op == "pow":  # small integer exponents are emitted as products, others as **
        expressions += [args[0] ** k for k in (2.0, 3.0, -1.0, -2.0, 0.5, 7.0)]
    if op in ("add", "mul"):
        expressions.append(apply(op, args[0], -args[1], 2.0))
    rng = np.random.default_rng(0)
    points = [list(rng.choice(EDGES, arity)) for _ in range(60)]
    points += [list(rng.uniform(-3, 3, arity)) for _ in range(20)]
    for expr in expressions:
        kernels, reference, size = _numba_twins(expr, list(args))
        for point in points:
            x = np.array(point, dtype=np.float64)
            want = np.empty(size)
            reference(x, want)
            for ours in kernels:
                got = np.empty(size)
                ours(x, got)
                same_nans = np.array_equal(np.isnan(got), np.isnan(want))
                bits = [np.where(np.isnan(v), 0.0, v).tobytes() for v in (got, want)]
                assert same_nans and bits[0] == bits[1], (op, point, got, want)  # -0.0 too


def test_row_kernels_read_every_input_before_writing_an_output():
    # The API passes floats in the array the results come back in (x is out).
    x, y = sg.symbols("x y")
    fn = sg.compile([y, x, x * y, x + y], [x, y])
    body = ast.parse(fn.source)
    steps = next(d for d in body.body if isinstance(d, ast.FunctionDef) and d.name == "value_steps")
    kinds = ["in" if isinstance(s.value, ast.Subscript) else
             "out" if isinstance(s.targets[0], ast.Subscript) else "step" for s in steps.body]
    assert kinds == sorted(kinds, key=["in", "step", "out"].index)
    shared = np.array([2.0, 3.0, 0.0, 0.0])
    fn.module.value_row(shared, shared)
    assert shared.tolist() == [3.0, 2.0, 6.0, 5.0]


def test_row_kernels_take_strided_and_float32_arrays():
    x, y = sg.symbols("x y")
    fn = sg.compile(x * y + sg.sin(x), [x, y])
    expected = np.empty(3)
    fn.module.value_grad_row(np.array([2.0, 3.0]), expected)
    strided, out = np.array([2.0, 9.0, 3.0])[::2], np.empty((3, 2))[:, 0]
    fn.module.value_grad_row(strided, out)
    assert out.tolist() == expected.tolist()
    single = np.empty(3, dtype=np.float32)
    fn.module.value_grad_row(np.array([2.0, 3.0], dtype=np.float32), single)
    assert single.tolist() == expected.astype(np.float32).tolist()
