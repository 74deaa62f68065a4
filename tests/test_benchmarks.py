"""Keep the benchmark harness working: a tiny run (2 workloads, 1 repeat, small batches) with the
core dependencies only, plus the pieces peers rely on (DAG conversion, the gradient check)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks import convert, measure, report, run
from benchmarks.workloads import WORKLOADS, build


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


def test_converted_dag_matches_symgraph():
    """The straight-line code handed to JAX/PyTorch/CasADi computes the same function."""
    for name in ("black_scholes", "nested200", "mlp"):
        expr, args = build(name)
        f = convert.function([expr], args, convert.templates("np", {
            "erf": "np.vectorize(math.erf)({})", "sigmoid": "1 / (1 + np.exp(-{}))"}),
            {"np": np, "math": math})
        w = WORKLOADS[name]
        X = w.batch(len(args), 4)
        from symgraph import evaluate

        want = evaluate(expr, {a.value: X[:, i] for i, a in enumerate(args)})
        assert np.allclose(f(X.T), want, rtol=1e-12, atol=0)


def test_relative_error_and_formatting():
    assert measure.relative_error([1.0, 2.0], [1.0, 2.0 + 1e-12]) < 1e-8
    assert measure.relative_error([1.0], [1.0, 2.0]) == math.inf
    assert measure.relative_error([math.nan], [1.0]) == math.inf
    assert report.seconds(2.5e-7) == "250 ns" and report.seconds(1.5) == "1.5 s"
    assert report.ratio(2.0, 1.0) == " (×2)"
