"""Keep the benchmark harness working: a tiny run (2 workloads, 1 repeat, small batches) with the
core dependencies only, plus the pieces peers rely on (DAG conversion, the gradient check)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks import convert, families, measure, peers, report, run
from benchmarks.workloads import WORKLOADS, build
from symgraph.ir.evaluate import evaluate
from symgraph.ir.ops import OPS


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    results = run.main(["--quick", "--repeats", "1", "--only", "polynomial,linear_mse",
                        "--peers", "handwritten", "--batch", "500", "--out", str(out)])
    return out, results


def test_tiny_run_writes_table_and_json(tiny_run):
    out, results = tiny_run
    text = (out / "results.md").read_text()
    assert "| workload | tool |" in text and "## Issue 5 targets" in text
    assert json.loads((out / "results.json").read_text())["meta"]["batch"] == 500
    rows = {(r["workload"], r["label"]): r for r in results["rows"]}
    assert set(rows) == {("polynomial", "symgraph"), ("linear_mse", "symgraph"),
                         ("polynomial", "hand-written Numba")}
    for row in rows.values():
        assert row["status"] == "ok", row
        for key in ("setup_cold_s", "setup_warm_s", "call_s", "batch_1t_s", "batch_all_s",
                    "batch_value_1t_s"):
            assert 0 < row[key] < 120, (key, row)
        assert row["check_error"] <= measure.CHECK_RTOL
    sg = rows[("linear_mse", "symgraph")]
    assert 0 < sg["ops_value"] < sg["ops_grad"]
    assert sg["extra_call_s"]["kernel"] < sg["call_s"] * 10
    assert "symgraph" in text and "hand-written Numba" in text


def _numpy_function(expr, args):
    import scipy.special as sc

    table = convert.templates("np", peers.NUMPY_OVERRIDES)
    return convert.function([expr], args, table, {"np": np, "sc": sc})


def test_converted_dag_matches_symgraph():
    """The straight-line code handed to JAX/PyTorch/CasADi computes the same function."""
    for name in ("black_scholes", "nested200", "mlp"):
        expr, args = build(name)
        w = WORKLOADS[name]
        X = w.batch(len(args), 4)
        want = evaluate(expr, {a.value: X[:, i] for i, a in enumerate(args)})
        assert np.allclose(_numpy_function(expr, args)(X.T), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(families.FAMILIES))
def test_every_generated_family_converts_for_the_array_peers_with_symgraphs_numbers(name):
    # A family the converter cannot write (hypot, min, softplus, ...) would drop JAX, PyTorch
    # and CasADi from its comparison and show as an error instead of a ratio.
    family = families.FAMILIES[name]
    expr, args = family.make(3)
    low, high = family.box(len(args))
    X = np.random.default_rng(1).uniform(low, high, (8, len(args)))
    want = evaluate(expr, {a.value: X[:, i] for i, a in enumerate(args)})
    assert np.allclose(_numpy_function(expr, args)(X.T), want, rtol=1e-12, atol=1e-300)


def test_every_op_has_a_template_for_each_array_peer_or_is_named_as_missing():
    written = {"add", "mul", "neg", "div", "pow"}  # operators, written by convert itself
    internal = {"pow_prev"}  # only derivatives make it; peers get the forward formula
    unmapped = {  # no function of that library computes it: the comparison says so
        "numpy": {"polygamma", "besselj", "bessely", "erfcinv"},
        "jax": {"polygamma", "besselj", "bessely", "erfcinv"},
        "torch": {"gamma", "beta", "lbeta", "polygamma", "besselj", "bessely", "erfcinv"},
        "casadi": {"erfc", "gamma", "lgamma", "digamma", "polygamma", "beta", "lbeta",
                   "besselj", "bessely", "erfcinv"},
    }
    tables = {"numpy": convert.templates("np", peers.NUMPY_OVERRIDES),
              "jax": convert.templates("jnp", peers.JAX_OVERRIDES),
              "torch": convert.templates("torch", peers.TORCH_OVERRIDES),
              "casadi": convert.templates("ca", peers.CASADI_OVERRIDES)}
    for library, table in tables.items():
        missing = set(OPS) - written - internal - set(table)
        assert missing == unmapped[library], library
        for op, template in table.items():  # every operand used, none beyond the arity
            arity = OPS[op].arity
            assert all(f"{{{i}}}" in template for i in range(arity)), (library, op)
            assert f"{{{arity}}}" not in template, (library, op)


def test_relative_error_and_formatting():
    assert measure.relative_error([1.0, 2.0], [1.0, 2.0 + 1e-12]) < 1e-8
    assert measure.relative_error([1.0], [1.0, 2.0]) == math.inf
    assert measure.relative_error([math.nan], [1.0]) == math.inf
    assert report.seconds(2.5e-7) == "250 ns" and report.seconds(1.5) == "1.5 s"
    assert report.ratio(2.0, 1.0) == " (×2)"


def test_warm_summary_counts_workloads_within_the_target_by_their_median_process():
    from benchmarks import warm

    def run(name, cpu, calls):
        return {"tree": ".", "name": name, "cpu_s": cpu, "calls_cpu_s": calls}

    runs = [run("a@1", 0.010, 0.001), run("a@1", 0.030, 0.001), run("a@1", 0.012, 0.001),
            run("b@2", 0.025, 0.010), run("b@2", 0.026, 0.010)]
    cpu, beside = warm.summary(runs)
    assert "within 20 ms 1/2" in cpu and "worst five b@2 25.5, a@1 12.0" in cpu
    assert "within 20 ms 2/2" in beside and "b@2 15.5" in beside
