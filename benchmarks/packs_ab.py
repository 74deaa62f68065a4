"""A/B of the point kernels' packs (symgraph.backends.numba.packs): each workload compiled
without packs and with each threshold asked for, ``fn.value_and_grad_floats`` timed in one
process, the variants taking turns (benchmarks.onepoint's `best_times`).

    python -m benchmarks.packs_ab --families fit --thresholds 4,8      # fit on these only
    python -m benchmarks.packs_ab --families validate --thresholds 8   # held out

A row's ``-`` marks a variant with no pack (the unpacked kernel, compiled again). ``--random``
times a random point of the box instead of its midpoint (a symmetric box's midpoint is 0,
where glibc's tanh and log take shortcuts that vecmath, branch-free, does not).
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from benchmarks import families
from benchmarks.onepoint import best_times

NONE = 10**9  # a threshold no pack reaches


def main(argv: list[str] | None = None) -> None:
    import symgraph as sg
    from symgraph.backends.numba import packs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="fit", help="fit, validate or names")
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--thresholds", default="8", help="MIN_MEMBERS values, comma-separated")
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--random", action="store_true")
    options = parser.parse_args(argv)
    names = {"fit": families.FIT, "validate": families.VALIDATE}.get(
        options.families, options.families.split(","))
    thresholds = [int(v) for v in options.thresholds.split(",")]
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    worst = (0.0, "")
    with tempfile.TemporaryDirectory() as scratch:
        for name in families.sizes(tuple(int(s) for s in options.sizes.split(",")), names):
            family, n = families.parse_name(name)
            expr, args = family.make(n)
            low, high = family.box(len(args))
            point = np.random.default_rng(1).uniform(low, high) if options.random else (
                (low + high) / 2)
            x = [float(v) for v in point]
            calls, packed = {}, {}
            for m in [NONE, *thresholds]:
                packs.MIN_MEMBERS = m
                fn = sg.compile(expr, args, cache_dir=os.path.join(scratch, f"{name}-{m}"),
                                strategy="straight")
                fn.value_and_grad_floats(*x)
                source = str(fn).rsplit(": ", 1)[1][:-1]
                with open(source, encoding="utf-8") as f:
                    packed[m] = "_packs = (" in f.read()
                calls[m] = (lambda f=fn.value_and_grad_floats, x=x: f(*x))
            times = best_times(calls, options.rounds, 200)
            base = times[NONE]
            cells = [f"{m}: {times[m] * 1e9:.0f} ns ({times[m] / base:.2f})"
                     + ("" if packed[m] else " -") for m in thresholds]
            worst = max(worst, *((times[m] / base, f"{name} at {m}") for m in thresholds
                                 if packed[m]))  # (an unpacked twin's ratio is noise)
            print(f"{name} ({sg.count_ops(expr)} ops): unpacked {base * 1e9:.0f} ns; "
                  + ", ".join(cells), flush=True)
    print(f"worst ratio of a packed kernel {worst[0]:.2f} ({worst[1]}); load average "
          f"{os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
