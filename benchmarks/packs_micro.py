"""Per-function A/B of the point kernels' packs (symgraph.backends.numba.simd's rules): N
independent calls of one function, ``sum((k + 1.5) * f(x_k))`` (for pow, ``x_k ** e``), its
value and gradient by ``fn.value_and_grad_floats`` unpacked and packed at each vector width
asked for, timed in one process, the variants taking turns (benchmarks.onepoint's `best_times`).

    python -m benchmarks.packs_micro --functions exp,log,tanh,sin --members 2,3,4,8 --widths 4,8

``W<w>`` is a pack over whole vectors of w doubles (on this host: 4 is AVX2's one vector,
8 two of them, as AVX-512's rule pads), every pack of at least one member run; each cell gives
the time and the nanoseconds saved (-) or lost (+) a member against the unpacked kernel. A
synthetic workload, not a family: fitting on it holds no family out.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

from benchmarks.onepoint import best_times

BOX = {"log": (0.5, 3.0), "pow": (0.5, 3.0), "lgamma": (0.5, 5.0), "digamma": (0.5, 5.0),
       "log1p": (0.1, 2.0)}


def main(argv: list[str] | None = None) -> None:
    import symgraph as sg
    from symgraph.backends.numba import packs, simd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--functions", default="exp,log,tanh,sin")
    parser.add_argument("--members", default="2,3,4,8")
    parser.add_argument("--widths", default="4,8")
    parser.add_argument("--rounds", type=int, default=150)
    options = parser.parse_args(argv)
    widths = [int(w) for w in options.widths.split(",")]
    host, fewest = simd.vector_doubles, simd.fewest
    here = host()
    print(f"load average {os.getloadavg()[0]:.1f} at the start; host {here} doubles a vector")
    with tempfile.TemporaryDirectory() as scratch:
        for f in options.functions.split(","):
            for n in (int(v) for v in options.members.split(",")):
                xs = [sg.symbols(f"x{i}") for i in range(n)]
                low, high = BOX.get(f, (-2.0, 2.0))
                point = [float(v) for v in np.random.default_rng(1).uniform(low, high, n)]
                if f == "pow":  # x_k ** e: its gradient logs the x_k too (log x_k * x_k ** e)
                    e = sg.symbols("e")
                    expr, point = sum(x**e * (k + 1.5) for k, x in enumerate(xs)), [*point, 1.7]
                    xs = [*xs, e]
                else:
                    expr = sum(getattr(sg, f)(x) * (k + 1.5) for k, x in enumerate(xs))
                calls = {}
                for name, width in [("plain", None), *((f"W{w}", w) for w in widths)]:
                    packs.MIN_MEMBERS = 10**9 if width is None else 1
                    simd.fewest = lambda _: 1  # every pack listed ...
                    simd.vector_doubles = lambda w=width or here: w
                    rules = simd.MEMBERS
                    simd.MEMBERS = {w: {"": 1} for w in widths}  # ... and run
                    for module in [k for k in sys.modules if k.startswith("symgraph_generated_")]:
                        del sys.modules[module]  # the same text: its own kernels, compiled again
                    try:
                        fn = sg.compile(expr, xs, cache_dir=os.path.join(scratch, f"{f}{n}{name}"),
                                        strategy="straight")
                        fn.value_and_grad_floats(*point)
                    finally:
                        simd.vector_doubles, simd.fewest, simd.MEMBERS = host, fewest, rules
                    calls[name] = (lambda g=fn.value_and_grad_floats, p=point: g(*p))
                times = best_times(calls, options.rounds, 200)
                base = times.pop("plain")
                print(f"{f} x{n}: unpacked {base * 1e9:.0f} ns; " + ", ".join(
                    f"{k} {t * 1e9:.0f} ns ({(t - base) * 1e9 / n:+.1f} a member)"
                    for k, t in times.items()), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
