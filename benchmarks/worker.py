"""One tool over a list of workloads, in its own process (run.py starts it): setup in a time box,
the gradient check against symgraph's, then the timings. Each result is one ``@@BENCH {json}``
line on stdout, so run.py keeps everything finished before a hard timeout.

``--warm TOOL`` instead times setup once more in this fresh process, from the on-disk caches.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import measure
from benchmarks.measure import TimeLimit, stopwatch, time_box
from benchmarks.tools import Prepared

MARK = "@@BENCH "
REFERENCE_ROWS = 3
RECURSION_LIMIT = 200_000


def emit(event: str, **data: Any) -> None:
    print(MARK + json.dumps({"event": event, **data}, default=float), flush=True)


def preparer(tool: str):
    if tool == "symgraph":
        from benchmarks.tools import prepare_symgraph
        return prepare_symgraph
    if tool == "handwritten":
        from benchmarks.tools import prepare_handwritten
        return prepare_handwritten
    from benchmarks.peers import PEERS
    return PEERS[tool]


def arity(name: str) -> int:
    from benchmarks.workloads import build

    n = len(build(name)[1])
    gc.collect()  # symgraph's own build stays cold: interned nodes die with their last user
    return n


def check(p: Prepared, point: np.ndarray, X: np.ndarray, ref: dict | None,
          first_batch: tuple) -> tuple[float, dict]:
    """(error vs the reference, this tool's reference data when there is no reference)."""
    value, grad = p.value_grad(point)
    values, grads = np.asarray(first_batch[0]).ravel(), np.asarray(first_batch[1])
    mine = {"value": float(value), "grad": np.asarray(grad, dtype=float).tolist(),
            "batch_values": values[:REFERENCE_ROWS].tolist(),
            "batch_grads": grads[:REFERENCE_ROWS].tolist()}
    if ref is None:
        return 0.0, mine
    error = max(measure.relative_error([value], [ref["value"]]),
                measure.relative_error(grad, ref["grad"]),
                measure.relative_error(mine["batch_values"], ref["batch_values"]),
                measure.relative_error(mine["batch_grads"], ref["batch_grads"]))
    return error, {}


def one_core(p: Prepared, on: bool) -> None:
    """1 thread (or, for a tool without the setting, every thread pinned to one CPU)."""
    if p.pin_for_one_core:
        measure.pin_process(measure.ALL_CORES[:1] if on else measure.ALL_CORES)
    if p.threads:
        p.threads(1 if on else measure.cores())


def measure_row(p: Prepared, workload: str, point: np.ndarray, X: np.ndarray,
                ref: dict | None, repeats: int, limit: float | None) -> dict:
    """Check, then time: 1-core batches first (the first one, time-boxed, ends the setup),
    the 1-point call, and all cores last in its own time box (oversubscribed thread pools
    can be pathologically slow on a busy machine)."""
    record: dict[str, Any] = {"label": p.label, "workload": workload, "notes": p.notes,
                              "setup_stages": p.setup, "details": p.details,
                              "ops_value": p.ops[0], "ops_grad": p.ops[1],
                              "multithreaded": p.threads is not None}
    if "error" in p.details:
        return {**record, "status": "error", "message": p.details["error"]}
    one_core(p, True)
    try:
        with time_box(limit):  # the first full-size batch compiles the batch kernel (JAX: per
            first, out = stopwatch(lambda: p.batch_vg(X))  # shape), so it is part of setup
            if p.settle is not None:  # (symgraph's interpreted first calls: kernels made now)
                record["switch_s"] = stopwatch(p.settle)[0]
        emit("setup_done", workload=workload)
        error, mine = check(p, point, X, ref, out)
        record["check_error"] = error
        if mine:
            record["reference"] = mine
        if error > measure.CHECK_RTOL:
            return {**record, "status": "mismatch",
                    "message": f"gradient differs from symgraph's: rel. error {error:.2e}"}
        record["batch_1t_s"], record["batch_1t_best_s"] = measure.per_batch(
            lambda: p.batch_vg(X), repeats)
        if p.batch_value is not None:
            record["batch_value_1t_s"], record["batch_value_1t_best_s"] = measure.per_batch(
                lambda: p.batch_value(X), repeats)
        record["extra_batch_1t_s"] = {k: measure.per_batch(lambda b=b: b(X), repeats).median
                                      for k, b in p.extra_batches.items()}
    finally:
        one_core(p, False)
    record["setup_stages"] = {**p.setup, "first batch (compile)":
                              max(0.0, first - record["batch_1t_s"])}
    record["setup_cold_s"] = sum(record["setup_stages"].values())
    record["call_s"], record["call_best_s"] = measure.per_call(p.point_call, repeats)
    record["extra_call_s"] = {k: measure.per_call(c, repeats).median
                              for k, c in p.extra_calls.items()}
    record["batch_all_s"] = record["batch_all_best_s"] = None  # one thread: shown as such
    if p.threads or p.pin_for_one_core:
        try:
            with time_box(limit):
                record["batch_all_s"], record["batch_all_best_s"] = measure.per_batch(
                    lambda: p.batch_vg(X), repeats)
        except TimeLimit:
            record["batch_all_note"] = f"> {limit:g} s"
    return {**record, "status": "ok"}


def import_tool(tool: str) -> None:
    """Import what the tool needs before any timing: a process pays imports once, and setup
    (cold or warm) is measured without them, the same for the first workload as the last."""
    from benchmarks.peers import IMPORTS

    for module in ["numba", "symgraph", *IMPORTS.get(tool, [])]:
        importlib.import_module(module)


def run(args: argparse.Namespace) -> None:
    from benchmarks.workloads import workload

    prepare = preparer(args.tool)
    import_tool(args.tool)
    refs = json.loads(Path(args.refs).read_text()) if args.refs else {}
    for name in args.workloads.split(","):
        emit("start", workload=name)
        w = workload(name)
        n = arity(name)
        point, X = w.point(n), w.batch(n, args.batch)
        ref = refs.get(name)
        if args.tool != "symgraph" and ref is None:
            emit("result", workload=name, status="skipped", label=args.tool,
                 message="no symgraph reference to check against")
            continue
        try:
            expr, params = (None, None)
            if args.tool not in ("symgraph", "handwritten"):
                from benchmarks.workloads import build
                expr, params = build(name)  # the formula, handed over (conversion is timed)
            with time_box(None if args.tool == "symgraph" else args.limit):
                rows = prepare(name=name, point=point, expr=expr, args=params,
                               cache_dir=args.cache_dir)
            for row in rows:
                began = time.perf_counter()
                result = measure_row(row, name, point, X, ref, args.repeats,
                                     None if args.tool == "symgraph" else args.limit)
                emit("result", wall_s=time.perf_counter() - began, **result)
        except TimeLimit as error:
            emit("result", workload=name, status="timeout", label=args.tool,
                 message=f"setup {error}")
        except Exception as error:  # report and go on with the next workload
            emit("result", workload=name, status="error", label=args.tool,
                 message=f"{type(error).__name__}: {str(error)[:300]}")
        gc.collect()
    emit("done")


def warm(args: argparse.Namespace) -> None:
    """Setup again in a fresh process: imports are timed apart from the setup itself."""
    start = time.perf_counter()
    prepare = preparer(args.warm)
    import_tool(args.warm)
    from benchmarks.workloads import build, prepared, workload
    imports = time.perf_counter() - start
    name = args.workloads
    w = workload(name)
    n = arity(name)
    point, X = w.point(n), w.batch(n, args.batch)
    expr, params = (None, None) if args.warm in ("symgraph", "handwritten") else build(name)
    prepared(name)
    [p] = prepare(name=name, point=point, expr=expr, args=params, cache_dir=args.cache_dir)[:1]
    first, _ = stopwatch(lambda: p.batch_vg(X))
    if p.settle is not None:
        p.settle()
    again, _ = stopwatch(lambda: p.batch_vg(X))
    stages = {**p.setup, "first batch (compile)": max(0.0, first - again)}
    emit("warm", workload=name, tool=args.warm, import_s=imports, stages=stages,
         setup_warm_s=sum(stages.values()))


def main(argv: list[str] | None = None) -> None:
    # SymPy and SymEngine recurse on deep trees (the 200-deep nesting): what a user does is
    # raise the limit; run.py gives this process a stack to match.
    sys.setrecursionlimit(RECURSION_LIMIT)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tool")
    parser.add_argument("--warm")
    parser.add_argument("--workloads", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--limit", type=float, default=120.0)
    parser.add_argument("--refs")
    parser.add_argument("--cache-dir", required=True)
    args = parser.parse_args(argv)
    warm(args) if args.warm else run(args)


if __name__ == "__main__":
    sys.exit(main())
