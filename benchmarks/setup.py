"""Setup of small and medium expressions, each in a fresh process (issue 20's "faster setup").

    python -m benchmarks.setup --families validate --sizes 10,100,1000   # cold, warm, SymEngine
    python -m benchmarks.setup --fit                     # the costs runtime.interpret weighs

Per workload (benchmarks/families.py), three fresh processes, imports (NumPy, Numba, symgraph,
SymEngine, SymPy) done and timed apart before the clock starts:

* symgraph cold: empty expression cache, and a new folder, so Numba's cache has none of its
  kernels (the tape interpreter stays compiled, as after ``symgraph precompile``);
* symgraph warm: a second process over the caches the cold one filled;
* SymEngine: to_sympy, sympify, diff, Lambdify (LLVM, cse), as benchmarks/peers.py does it.

Setup is expression -> the first value+gradient at a point (floats) and of a batch of
`--batch` points (the first full batch counts whole: its kernels may compile or run on the
interpreter; after it, untimed, the cold process makes the kernels its calls would switch to
once they pay, as benchmarks/run.py does, so the warm process finds every cache filled).
The warm process's CPU time over the same span is reported too (all its threads; Numba runs
batches on one here): on a shared machine, wall time adds the waits for a core.
``--fit`` times what runtime.interpret's rule needs per operation (interpreted
and compiled calls, compiles) on the FIT families, or with ``--families validate`` on the
held-out ones, to check the fitted constants.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

MARK = "@@SETUP "


def _child(tool: str, name: str, cache: str, batch: int) -> None:
    began = time.perf_counter()
    import numba  # noqa: F401

    import symgraph as sg
    if tool == "symengine":
        import symengine  # noqa: F401
        import sympy  # noqa: F401
    from benchmarks.families import parse_name
    imports = time.perf_counter() - began
    family, n = parse_name(name)
    expr, args = family.make(n)
    low, high = family.box(len(args))
    rng = np.random.default_rng(0)
    X = low + (high - low) * rng.random((batch, len(args)))
    point = [float(v) for v in X[0]]
    start, cpu = time.perf_counter(), time.process_time()
    if tool == "symengine":
        from benchmarks.peers import prepare_symengine
        [p] = prepare_symengine(expr=expr, args=args, point=np.array(point))
        p.value_grad(np.array(point))
        p.batch_vg(X)
    else:
        fn = sg.compile(expr, args, cache_dir=cache)
        fn.value_and_grad(*point)
        fn.value_and_grad(X)
    setup = time.perf_counter() - start
    cpu = time.process_time() - cpu  # (the process's CPU time: what load on the machine adds
    # to wall time, waiting for a core, is not in it)
    pending = getattr(getattr(fn, "_built", None), "pending", None) if tool != "symengine" else None
    # (whether the first batch ran on the interpreter: its switch not made by then)
    interpreted = bool(pending) and not fn._built.made
    switch = 0.0
    if tool != "symengine" and hasattr(fn._built, "pending"):
        # Untimed in setup: the straight-line kernels the calls would switch to once they pay
        # (as benchmarks/run.py does), so that the warm process finds Numba's cache filled.
        from benchmarks.tools import _switch
        began = time.perf_counter()
        _switch(fn, np.array(point))
        switch = time.perf_counter() - began
    calls = calls_cpu = math.nan
    if tool != "symengine":
        # Untimed in setup: the same calls on the compiled kernels (the best of three), the part
        # of setup that is the work itself (a 20,000-point batch of a 1,000-operation function
        # takes 30-80 ms compiled); setup minus this is what setting up costs.
        if hasattr(fn._built, "pending") and not fn._built.made:
            from benchmarks.tools import _switch
            _switch(fn, np.array(point))
        times, cpus = [], []
        for _ in range(3):
            began, cpu_began = time.perf_counter(), time.process_time()
            fn.value_and_grad(*point)
            fn.value_and_grad(X)
            times.append(time.perf_counter() - began)
            cpus.append(time.process_time() - cpu_began)
        calls, calls_cpu = min(times), min(cpus)
    print(MARK + json.dumps({"import_s": imports, "setup_s": setup, "cpu_s": cpu,
                             "switch_s": switch,
                             "calls_s": calls, "calls_cpu_s": calls_cpu,
                             "interpreted": interpreted,
                             "ops": sg.count_ops(expr)}), flush=True)


def _run(tool: str, name: str, cache: str, batch: int, limit: float) -> dict:
    env = {**os.environ, "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS", "1")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as benchmarks/run.py: bytecode is cached
    try:
        out = subprocess.run([sys.executable, "-m", "benchmarks.setup", "--child", tool, name,
                              cache, str(batch)], capture_output=True, text=True, env=env,
                             timeout=limit)
    except subprocess.TimeoutExpired:
        return {"setup_s": math.inf, "ops": -1, "switch_s": 0.0, "calls_s": math.nan}
    for line in out.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    if tool == "symengine":  # (it fails on some ops, e.g. max's derivative: left out)
        return {"setup_s": math.nan, "ops": -1, "switch_s": 0.0, "calls_s": math.nan}
    raise RuntimeError(f"{tool} {name}: {out.stderr[-800:]}")


def _spread(values: list[float]) -> str:
    if not values:
        return "none"
    return (f"min {min(values):.3g}, median {statistics.median(values):.3g}, "
            f"worst {max(values):.3g}")


def compare(names: list[str], batch: int, limit: float) -> None:
    rows = []
    print(f"load {os.getloadavg()}", flush=True)
    for name in names:
        cache = tempfile.mkdtemp(prefix="sg-setup-")
        cold = _run("symgraph", name, cache, batch, 600)
        warm = _run("symgraph", name, cache, batch, 600)
        peer = _run("symengine", name, cache, batch, limit)
        over = warm["setup_s"] - warm.get("calls_s", math.nan)
        cpu = warm.get("cpu_s", math.nan)  # (r[6]; r[8]: CPU minus the calls' CPU alone)
        rows.append((name, cold["ops"], cold["setup_s"], warm["setup_s"], peer["setup_s"], over,
                     cpu, cold.get("cpu_s", math.nan), cpu - warm.get("calls_cpu_s", math.nan)))
        print(f"{name:24s} ops {cold['ops']:5d}  cold {cold['setup_s'] * 1e3:8.1f} ms  warm "
              f"{warm['setup_s'] * 1e3:7.1f} ms (calls alone {warm.get('calls_s', 0) * 1e3:.1f}; "
              f"CPU {cpu * 1e3:.1f}, the calls' {warm.get('calls_cpu_s', math.nan) * 1e3:.1f})"
              f"  SymEngine {peer['setup_s'] * 1e3:8.1f} ms  "
              f"cold/SymEngine {cold['setup_s'] / peer['setup_s']:5.2f}  (switch, untimed: "
              f"{cold.get('switch_s', 0) * 1e3:.0f} ms)", flush=True)
    print(f"load {os.getloadavg()}")
    timed = [r for r in rows if math.isfinite(r[4])]  # (SymEngine past --limit or failed: left out)
    ratios = [r[2] / r[4] for r in timed]
    print(f"cold / SymEngine ({len(timed)} workloads; SymEngine past the limit or failed on "
          f"{len(rows) - len(timed)}): {_spread(ratios)}")
    print(f"cold ms: {_spread([r[2] * 1e3 for r in rows])}")
    print(f"warm ms: {_spread([r[3] * 1e3 for r in rows])}")
    for low, high in ((0, 30), (30, 300), (300, 3000)):
        band = [r for r in rows if low < r[1] <= high]
        if band:
            print(f"  {low}-{high} operations ({len(band)}): cold ms "
                  f"{_spread([r[2] * 1e3 for r in band])}; warm ms "
                  f"{_spread([r[3] * 1e3 for r in band])}; warm minus the calls alone ms "
                  f"{_spread([r[5] * 1e3 for r in band if math.isfinite(r[5])])}; warm CPU ms "
                  f"{_spread([r[6] * 1e3 for r in band if math.isfinite(r[6])])}; warm CPU "
                  f"minus the calls' CPU alone ms "
                  f"{_spread([r[8] * 1e3 for r in band if math.isfinite(r[8])])}"
                  f"; cold CPU ms {_spread([r[7] * 1e3 for r in band if math.isfinite(r[7])])}")
    worst = sorted(timed, key=lambda r: -r[2] / r[4])[:5]
    print("worst cold/SymEngine: " + ", ".join(f"{r[0]} {r[2] / r[4]:.2f}" for r in worst))
    over = [r for r in rows if r[3] > 0.020 and r[1] <= 1000]
    print(f"warm over 20 ms: {len(over)}: " + ", ".join(f"{r[0]} {r[3] * 1e3:.0f}" for r in over))
    over = [r for r in rows if r[5] > 0.020 and r[1] <= 1000]
    print(f"warm minus the calls alone over 20 ms: {len(over)}: "
          + ", ".join(f"{r[0]} {r[5] * 1e3:.0f}" for r in over))
    over = [r for r in rows if r[8] > 0.020 and r[1] <= 1000]
    print(f"warm CPU minus the calls' CPU alone over 20 ms: {len(over)}: "
          + ", ".join(f"{r[0]} {r[8] * 1e3:.0f}" for r in over))


def _per_call(fn, *args, seconds: float = 0.05) -> float:
    fn(*args)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn(*args)
        count += 1
    return (time.perf_counter() - start) / count


def fit(names: list[str]) -> None:
    """Per workload: interpreted and compiled costs, and the compile, in one process (Numba's
    per-process set-up paid first, by a warm-up compile)."""
    import symgraph as sg
    from benchmarks.families import parse_name
    from symgraph.runtime.interpret import Pending

    x0, y0 = sg.symbols("x0 y0")
    sg.compile(sg.exp(x0) * y0, [x0, y0], strategy="straight").value_and_grad(
        np.ones((10, 2)))  # Numba's set-up
    print("workload ops interp_row_us interp_batch_ns/op/pt compiled_row_us "
          "compiled_ns/op/pt compile_row_ms compile_batch_ms")
    for name in names:
        family, n = parse_name(name)
        expr, args = family.make(n)
        low, high = family.box(len(args))
        X = low + (high - low) * np.random.default_rng(0).random((20000, len(args)))
        x = X[0].copy()
        out, OUT = np.empty(1 + len(args)), np.empty((len(X), 1 + len(args)))
        auto = sg.compile(expr, args, cache_dir=tempfile.mkdtemp())
        if not hasattr(auto._built, "pending"):
            print(f"{name}: {auto.strategy} (nothing interpreted)")
            continue
        pending: Pending = auto._built.pending["value_grad"]
        ops = pending.ops
        row = _per_call(lambda p=pending, x=x, out=out: p._row(x.tolist(), out))
        bat = _per_call(lambda p=pending, X=X, OUT=OUT: p._interpret(X, OUT), seconds=0.2)
        fn = sg.compile(expr, args, strategy="straight", cache_dir=tempfile.mkdtemp())
        r, b = (k.unchecked for k in fn.kernels("value_grad"))
        t0 = time.perf_counter()
        r(x, out)
        t1 = time.perf_counter()
        b(X, OUT)
        t2 = time.perf_counter()
        crow = _per_call(lambda r=r, x=x, out=out: r(x, out))
        cbat = _per_call(lambda b=b, X=X, OUT=OUT: b(X, OUT))
        print(f"{name} {ops} {row * 1e6:.2f} {bat / ops / len(X) * 1e9:.2f} "
              f"{crow * 1e6:.3f} {cbat / ops / len(X) * 1e9:.3f} {(t1 - t0) * 1e3:.0f} "
              f"{(t2 - t1 - cbat) * 1e3:.0f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        _child(argv[1], argv[2], argv[3], int(argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--families", default="validate", help="fit, validate or all")
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--only", default="", help="comma-separated family@n names")
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds for SymEngine")
    args = parser.parse_args(argv)
    from benchmarks import families

    if args.only:
        names = args.only.split(",")
    else:
        chosen = {"fit": families.FIT, "validate": families.VALIDATE,
                  "all": list(families.FAMILIES)}[args.families]
        targets = tuple(int(s) for s in args.sizes.split(","))
        names = list(families.sizes(targets, chosen))
    fit(names) if args.fit else compare(names, args.batch, args.limit)


if __name__ == "__main__":
    main()
