"""The benchmark's workload generator (benchmarks/families.py) keeps working: every family builds
the same expression each time, is finite with a finite gradient on its box, reaches the sizes
the benchmark asks for, and every backend and strategy computes the same numbers on it."""

from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as sg
from benchmarks import families
from benchmarks.workloads import workload
from symgraph.ir.evaluate import count_ops, evaluate

KINDS = {"statistics", "thermochemistry", "molecular", "mechanics", "quadratic", "rational",
         "finance", "ml", "pde", "nested", "piecewise"}


def test_at_least_25_families_cover_every_kind_and_split_into_fit_and_held_out():
    assert len(families.FAMILIES) >= 25
    assert {f.kind for f in families.FAMILIES.values()} == KINDS
    assert families.FIT and families.VALIDATE
    assert not set(families.FIT) & set(families.VALIDATE)
    assert set(families.FIT) | set(families.VALIDATE) == set(families.FAMILIES)


@pytest.mark.parametrize("name", sorted(families.FAMILIES))
def test_family_is_deterministic_and_finite_with_a_finite_gradient_on_its_box(name):
    family = families.FAMILIES[name]
    expr, args = family.make(3)
    again, args_again = family.make(3)
    assert again is expr and args_again == args  # interned: the same coefficients, same node
    assert sg.to_text(expr) == sg.to_text(family.make(3)[0])
    low, high = family.box(len(args))
    assert low.shape == high.shape == (len(args),) and np.all(low < high)
    points = np.random.default_rng(0).uniform(low, high, (16, len(args)))
    env = {a.value: points[:, i] for i, a in enumerate(args)}
    values = evaluate([expr, *sg.grad(expr, args)], env)
    assert all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in values)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(families.FAMILIES))
def test_family_stays_finite_on_its_box_at_large_sizes(name):
    # The benchmark builds families at up to 5,000 operations: a box that fits n = 3 only (a
    # log's argument turning negative at n = 74) would time nan paths and check nan against nan.
    family = families.FAMILIES[name]
    expr, args = family.make(60)
    low, high = family.box(len(args))
    rng = np.random.default_rng(2)
    points = np.vstack([low, high, rng.uniform(low, high, (62, len(args)))])
    env = {a.value: points[:, i] for i, a in enumerate(args)}
    values = evaluate([expr, *sg.grad(expr, args)], env)
    assert all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in values)


@pytest.mark.slow  # families up to n = 400: ~2-6 s
def test_cubic_eos_volume_stays_above_the_covolume_at_every_size():
    for n in (1, 10, 74, 96, 400):
        expr, args = families.FAMILIES["cubic_eos"].make(n)
        low, high = families.FAMILIES["cubic_eos"].box(len(args))
        # the covolume b is largest at x_i = 1 (coefficients at most 0.2); V's lower edge is above
        worst = {a.value: float(h) for a, h in zip(args, high)} | {"V": float(low[-2])}
        assert np.isfinite(evaluate([expr], {k: np.array([v]) for k, v in worst.items()})[0]).all()


@pytest.mark.parametrize("name", ["gauss_loglik", "lennard_jones", "bratu", "tiered_cost"])
def test_sizes_reach_their_operation_counts_within_a_factor_of_two(name):
    family = families.FAMILIES[name]
    for target in (10, 100):
        found = families.size_for(family, target)
        if found is None:  # a family whose smallest member is bigger than the target
            assert count_ops(family.make(1)[0]) > target
            continue
        n, ops = found
        assert target / 2 <= ops <= 2 * target and count_ops(family.make(n)[0]) == ops


def test_generated_workload_names_resolve_and_bad_ones_say_what_exists():
    w = workload("huber_regression@3")
    expr, args = w.build(None)
    assert expr is families.FAMILIES["huber_regression"].make(3)[0] and len(args) == 2
    with pytest.raises(KeyError, match="family@n"):
        workload("no_such_family@3")


# Families with disjoint variable names, summed: one compile per backend and strategy covers
# piecewise, molecular, finance, nested, PDE, and statistics formulas at once.
MIXED = ["huber_regression", "lennard_jones", "option_portfolio", "composition", "bratu",
         "gauss_loglik", "poisson_glm"]


@pytest.fixture(scope="module")
def mixed():
    parts = [families.FAMILIES[n].make(2) for n in MIXED]
    args = [a for _, part_args in parts for a in part_args]
    assert len({a.value for a in args}) == len(args)
    boxes = [families.FAMILIES[n].box(len(a)) for n, (_, a) in zip(MIXED, parts)]
    low, high = np.concatenate([b[0] for b in boxes]), np.concatenate([b[1] for b in boxes])
    points = np.random.default_rng(1).uniform(low, high, (64, len(args)))
    return sg.apply("add", *[e for e, _ in parts]), args, points


@pytest.mark.parametrize("backend,strategy", [("numba", "straight"), ("numba", "tape")])
def test_every_strategy_gives_the_python_backends_numbers_on_generated_families(
        mixed, backend, strategy):
    expr, args, points = mixed
    want = sg.compile(expr, args, backend="python").value_and_grad(points)
    got = sg.compile(expr, args, backend=backend, strategy=strategy).value_and_grad(points)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-11, atol=1e-12)
    one = sg.compile(expr, args, backend=backend, strategy=strategy).value_and_grad(points[0])
    np.testing.assert_allclose(one[0], want[0][0], rtol=1e-12)


def _agree(got: np.ndarray, want: np.ndarray) -> None:
    # Relative to each row's largest entry: a gradient entry that cancels to ~0 differs by
    # the rounding of the terms that cancelled (libm's and vecmath's exp differ in the last bit).
    got, want = np.atleast_2d(got), np.atleast_2d(want)
    scale = np.max(np.abs(want), axis=1, keepdims=True)
    assert np.all(np.abs(got - want) <= 1e-10 * np.abs(want) + 1e-12 * scale), (got, want)


@pytest.mark.parametrize("strategy", ["straight", "tape"])
@pytest.mark.parametrize("name", sorted(families.FAMILIES))
def test_every_family_gets_the_python_backends_numbers_from_every_numba_strategy(name, strategy):
    # Each family on its own (the MIXED sum above covers seven at once): the batch kernel
    # (lanes or the per-point loop, as the program picks) over 2 blocks and a partial one,
    # and the one-point floats entry, against the Python backend's `math` and NumPy.
    family = families.FAMILIES[name]
    expr, args = family.make(2)
    low, high = family.box(len(args))
    points = np.random.default_rng(7).uniform(low, high, (133, len(args)))
    want_values, want_grads = sg.compile(expr, args, backend="python").value_and_grad(points)
    fn = sg.compile(expr, args, strategy=strategy)
    values, grads = fn.value_and_grad(points)
    _agree(np.column_stack([values, grads]), np.column_stack([want_values, want_grads]))
    for i in (0, 64, 132):
        value, grad = fn.value_and_grad_floats(*map(float, points[i]))
        _agree(np.array([value, *grad]), np.concatenate([[want_values[i]], want_grads[i]]))


def test_the_one_point_benchmark_checks_every_form_against_the_others_with_numba(tmp_path):
    # benchmarks/onepoint.py's calls on the smallest family: symgraph's forms and SymPy+njit
    # agree (prepare asserts it) and each call runs.
    from benchmarks import onepoint

    calls, ops, arguments = onepoint.prepare("gauss_loglik@1", str(tmp_path))
    assert set(calls) == set(onepoint.FORMS) and (ops, arguments) == (8, 2)
    times = onepoint.best_times(calls, rounds=1, loop=1)
    assert set(times) == set(calls) and all(t >= 0 for t in times.values())


def test_the_one_point_benchmark_times_symgraph_where_numba_cannot_compile_the_peer(tmp_path):
    # SymPy lambdifies lgamma's derivative as polygamma(0, x), which Numba cannot compile: the
    # workload keeps symgraph's forms (checked against each other), without the peer's.
    from benchmarks import onepoint

    calls, _, arguments = onepoint.prepare("negbin_loglik@1", str(tmp_path))
    assert set(calls) == set(onepoint.FORMS) - {"SymPy+njit"} and arguments == 2


def test_auto_interprets_first_then_switches_to_numba_kernels_with_the_same_numbers(mixed):
    expr, args, points = mixed
    fn = sg.compile(expr, args)  # strategy "auto": a 64-point batch is too small to compile
    values, grads = fn.value_and_grad(points)
    value, grad = fn.value_and_grad(points[0])
    assert fn._built._built is None
    for pending in fn._built.pending.values():
        pending.lost_ns = float("inf")  # as if the interpreter had lost the switch's cost
    got = fn.value_and_grad(points)
    assert fn._built._built is not None  # switched: the straight-line Numba kernels
    np.testing.assert_allclose(got[0], values, rtol=1e-12)
    np.testing.assert_allclose(got[1], grads, rtol=1e-11, atol=1e-12)
    one = fn.value_and_grad(points[0])
    assert one[0] == pytest.approx(value, rel=1e-14)
    np.testing.assert_allclose(one[1], grad, rtol=1e-13, atol=1e-14)


def test_the_lanes_ab_benchmark_times_each_variant_and_restores_the_constants(capsys):
    # benchmarks/lanes_ab.py on the smallest family: a variant of a batch constant that
    # writes the same kernel says so, and every constant is back to its value after.
    from benchmarks import lanes_ab
    from symgraph.backends.numba import batch
    from symgraph.backends.numba.runtime import lanes

    before = (batch.SERIAL_SLOT_BYTES, lanes.PREFETCH_COLUMNS)
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    lanes_ab.main(["fpu_chain@1", "batch.SERIAL_SLOT_BYTES=1024;lanes.PREFETCH_COLUMNS=1",
                   "--sizes", "64"])
    line = capsys.readouterr().out.strip()
    assert line.startswith("fpu_chain@1") and len(line.split("|")[0].split()) == 3
    assert "(same source)" not in line  # a lanes constant is no batch one
    assert (batch.SERIAL_SLOT_BYTES, lanes.PREFETCH_COLUMNS) == before
    if hasattr(os, "sched_getaffinity"):
        assert os.sched_getaffinity(0) == cpus  # pinned to one core only while it ran
    lanes_ab.main(["fpu_chain@1", "batch.SERIAL_SLOT_BYTES=1024;", "--sizes", "64"])
    assert capsys.readouterr().out.strip().endswith("(same source)")
