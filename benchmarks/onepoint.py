"""The 1-point call on the generated families: symgraph's API against ``numba.njit`` of SymPy's
lambdified gradient, timed in the same process, interleaved.

    python -m benchmarks.onepoint                          # every family at 10 and 100 ops
    python -m benchmarks.onepoint --families validate --sizes 10,100 --out onepoint.md

Per workload: symgraph's ``fn.value_and_grad_floats`` (floats in, a value and a tuple of
floats out: the fastest documented form), ``fn.value_and_grad`` with floats, with one float64
array, with floats and a preallocated ``out=``, its raw row kernel (``fn.kernels()``'s
unchecked one, with arrays allocated once), and SymPy + numba.njit called with floats
(``jf(*floats)``, as benchmarks/peers.py calls it; it returns a list of floats). Each call is
timed as the best of many short loops, the variants taking turns, so that a shared machine's
other load hits them alike; the figures are per call, with the loop's own cost subtracted.
The table ends with the distribution of symgraph-to-njit ratios per form (below 1: symgraph
is faster), how many workloads each form runs in <= 0.5 us, and the load average.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks import families

FORMS = ["floats_floats", "floats", "array", "out=", "raw row", "SymPy+njit"]
API_FORMS = FORMS[:4]  # the documented calls (summarised against SymPy+njit)
TARGET_S = 0.5e-6  # issue 20: <= 0.5 us for functions up to ~100 operations


def best_times(calls: dict[str, Callable[[], Any]], rounds: int, loop: int) -> dict[str, float]:
    """Seconds per call of each of `calls`: the best of `rounds` loops of `loop` calls each,
    the calls taking turns, minus an empty loop's best."""
    calls = {"": lambda: None, **calls}
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(loop):
                call()
            best[name] = min(best[name], time.perf_counter() - start)
    empty = best.pop("")
    return {name: max(0.0, t - empty) / loop for name, t in best.items()}


def prepare(name: str, cache_dir: str) -> tuple[dict[str, Callable[[], Any]], int, int]:
    """The timed calls of workload `name` (``family@n``), checked against each other; its
    operation count and number of arguments."""
    import numba
    import sympy as sp

    import symgraph as sg
    from symgraph.frontends.sympy_bridge import to_sympy

    family, n = families.parse_name(name)
    expr, args = family.make(n)
    low, high = family.box(len(args))
    x = np.ascontiguousarray((low + high) / 2, dtype=np.float64)
    floats = [float(v) for v in x]
    fn = sg.compile(expr, args, cache_dir=cache_dir)
    value, gradient = fn.value_and_grad(*floats)
    row = fn.kernels("value_grad")[0].unchecked
    out, g = np.empty(1 + len(args)), np.empty(len(args))
    calls: dict[str, Callable[[], Any]] = {
        "floats": lambda: fn.value_and_grad(*floats),
        "array": lambda: fn.value_and_grad(x),
        "raw row": lambda: row(x, out)}
    try:  # (symgraph before the out= form: not timed)
        fn.value_and_grad(*floats, out=g)
        calls["out="] = lambda: fn.value_and_grad(*floats, out=g)
    except (TypeError, ValueError):
        pass
    both = getattr(fn, "value_and_grad_floats", None)  # (symgraph before it: not timed)
    if both is not None:
        got = both(*floats)  # (the first call was interpreted, with libm; a packed point
        # kernel's vecmath calls are within an ulp of it: backends.numba.packs)
        np.testing.assert_allclose(np.array([got[0], *got[1]]), np.array([value, *gradient]),
                                   rtol=1e-13, atol=1e-13)
        calls["floats_floats"] = lambda: fn.value_and_grad_floats(*floats)
    syms = [sp.Symbol(a.value, real=True) for a in args]
    e = to_sympy(expr, {s.name: s for s in syms})
    jf = numba.njit(sp.lambdify(syms, [e, *[sp.diff(e, s) for s in syms]], "math", cse=True))
    row(x, out)
    mine = [np.array([value, *gradient]), out]
    try:  # (Numba cannot compile every lambdified gradient: SymPy's polygamma, the digamma)
        theirs = np.array(jf(*floats), dtype=float)
        calls["SymPy+njit"] = lambda: jf(*floats)
        mine.append(theirs)
    except numba.core.errors.TypingError as error:
        print(f"{name}: no SymPy+njit ({str(error).splitlines()[1].strip()[:80]})", flush=True)
    for got in mine:
        np.testing.assert_allclose(got, out, rtol=1e-8, atol=1e-12)
    return calls, sg.count_ops(expr), len(args)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="all",
                        help="'all', 'fit', 'validate' or comma-separated family names")
    parser.add_argument("--sizes", default="10,100", help="operation counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--loop", type=int, default=200)
    parser.add_argument("--out", help="also write the table to this file")
    options = parser.parse_args(argv)
    names = {"all": None, "fit": families.FIT, "validate": families.VALIDATE}.get(
        options.families, options.families.split(","))
    targets = tuple(int(s) for s in options.sizes.split(","))
    workloads = families.sizes(targets, names)
    start_load = os.getloadavg()
    lines = [f"1-point value+gradient, per call ({platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} CPUs; load average {start_load[0]:.1f} at the start)", "",
             "| workload | ops | args | " + " | ".join(FORMS) + " | best form / njit |",
             "|---|---:|---:|" + "---:|" * (len(FORMS) + 1)]
    ratios: dict[str, list[tuple[float, str]]] = {f: [] for f in API_FORMS}
    times_of: dict[str, list[float]] = {f: [] for f in API_FORMS}
    with tempfile.TemporaryDirectory() as scratch:
        cache = os.environ.get("SYMGRAPH_BENCH_CACHE", scratch)
        for name in workloads:
            try:
                calls, ops, arguments = prepare(name, cache)
            except Exception as error:  # noqa: BLE001 - one workload failing: say so, go on
                lines.append(f"| {name} | error: {type(error).__name__}: {error} |")
                continue
            times = best_times(calls, options.rounds, options.loop)
            njit = times.get("SymPy+njit")  # (None: Numba could not compile it)
            for form in ratios:
                if form in times:
                    if njit is not None:
                        ratios[form].append((times[form] / njit, name))
                    times_of[form].append(times[form])
            cells = [f"{times[f] * 1e9:.0f} ns" if f in times else "fails" for f in FORMS]
            best = min(times[f] for f in API_FORMS if f in times)
            lines.append(f"| {name} | {ops} | {arguments} | " + " | ".join(cells)
                         + (f" | {best / njit:.2f} |" if njit is not None else " | - |"))
            print(lines[-1], flush=True)
    lines += ["", "symgraph / SymPy+njit per call (below 1: symgraph is faster), and the time "
              "per call:", "", "| form | ratio min | median | worst | worst workload | "
              "faster than njit | time min / median / worst | <= 0.5 us |",
              "|---|---:|---:|---:|---|---:|---|---:|"]
    for form, pairs in ratios.items():
        spent = sorted(times_of[form])  # every workload's, with SymPy+njit or without
        if not spent:
            continue
        span = " / ".join(f"{t * 1e9:,.0f}" for t in (spent[0], statistics.median(spent),
                                                       spent[-1]))
        values, worst = sorted(r for r, _ in pairs), max(pairs, default=None)
        ratio = (f"{values[0]:.2f} | {statistics.median(values):.2f} | {worst[0]:.2f} | "
                 f"{worst[1]}" if worst else "- | - | - | -")
        lines.append(f"| {form} | {ratio} | {sum(v < 1 for v in values)} of {len(values)} | "
                     f"{span} ns | {sum(t <= TARGET_S for t in spent)} of {len(spent)} |")
    lines += ["", "(floats_floats: `fn.value_and_grad_floats(*floats)`; floats: "
              "`fn.value_and_grad(*floats)`; array: `fn.value_and_grad(x)`; out=: "
              "`fn.value_and_grad(*floats, out=g)`.)"]
    end_load = os.getloadavg()
    lines += ["", f"Load average {end_load[0]:.1f} {end_load[1]:.1f} {end_load[2]:.1f} at the "
              "end."]
    text = "\n".join(lines) + "\n"
    print(text)
    if options.out:
        with open(options.out, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
