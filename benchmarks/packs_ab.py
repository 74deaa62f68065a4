"""A/B of the point kernels' packs (symgraph.backends.numba.packs): each workload compiled
without packs and as each variant asked for, ``fn.value_and_grad_floats`` timed in one
process, the variants taking turns (benchmarks.onepoint's `best_times`).

    python -m benchmarks.packs_ab --families fit --thresholds 4,8      # fit on these only
    python -m benchmarks.packs_ab --families validate --thresholds 8   # held out
    python -m benchmarks.packs_ab --families fit --thresholds 8/8-pow,2  # before, now

A variant is ``M`` (packs.MIN_MEMBERS, the floor of the candidates the module lists; the
lowering runs them as the host's rule says: backends.numba.simd) or ``M/W``: the lowering as
on a CPU of W doubles a vector (``8/8`` is the rule fitted on AVX-512, on any host);
``-pow`` after either: no pack of x ** y (``8/8-pow`` is the rule before packs were fitted
for AVX2, at b1ffcc8). A row's ``-`` marks a variant with no pack listed (the unpacked
kernel, compiled again). ``--random`` times a random point of the box instead of its
midpoint (a symmetric box's midpoint is 0, where glibc's tanh and log take shortcuts that
vecmath, branch-free, does not). The end gives each variant's
distribution: min, median, the worst five and how many are within 0.5 us.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

from benchmarks import families
from benchmarks.onepoint import TARGET_S, best_times

NONE = 10**9  # a threshold no pack reaches


def _variant(text: str) -> tuple[int, int | None, bool]:
    """(MIN_MEMBERS, doubles a vector or None for the host's, whether x ** y packs) of ``M``
    or ``M/W``, ``-pow`` after either: no pow packs."""
    text, pow_ = text.removesuffix("-pow"), not text.endswith("-pow")
    m, _, w = text.partition("/")
    return int(m), int(w) if w else None, pow_


def summary(label: str, times: dict[str, float]) -> str:
    """One line: min, median, the worst five (ns) and the count within TARGET_S."""
    spent = sorted(times.items(), key=lambda item: item[1])
    values = [t for _, t in spent]
    worst = ", ".join(f"{name} {t * 1e9:.0f}" for name, t in reversed(spent[-5:]))
    return (f"{label}: min {values[0] * 1e9:.0f} ns, median "
            f"{statistics.median(values) * 1e9:.0f} ns, worst {worst}; "
            f"<= 0.5 us {sum(t <= TARGET_S for t in values)} of {len(values)}")


def main(argv: list[str] | None = None) -> None:
    import symgraph as sg
    from symgraph.backends.numba import packs, simd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="fit", help="fit, validate or names")
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--thresholds", default="8", help="variants, M or M/W, comma-separated")
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--random", action="store_true")
    options = parser.parse_args(argv)
    names = {"fit": families.FIT, "validate": families.VALIDATE}.get(
        options.families, options.families.split(","))
    variants = options.thresholds.split(",")
    host, several = simd.vector_doubles, packs.SEVERAL
    print(f"load average {os.getloadavg()[0]:.1f} at the start; host {host()} doubles a vector")
    worst = (0.0, "")
    every: dict[str, dict[str, float]] = {v: {} for v in ["none", *variants]}
    with tempfile.TemporaryDirectory() as scratch:
        for name in families.sizes(tuple(int(s) for s in options.sizes.split(",")), names):
            family, n = families.parse_name(name)
            expr, args = family.make(n)
            low, high = family.box(len(args))
            point = np.random.default_rng(1).uniform(low, high) if options.random else (
                (low + high) / 2)
            x = [float(v) for v in point]
            calls, packed = {}, {}
            for k, v in enumerate(["none", *variants]):
                m, width, pow_ = (NONE, None, True) if v == "none" else _variant(v)
                packs.MIN_MEMBERS = m
                packs.SEVERAL = several if pow_ else set()
                simd.vector_doubles = host if width is None else (lambda w=width: w)
                for module in [k for k in sys.modules if k.startswith("symgraph_generated_")]:
                    del sys.modules[module]  # the same text: its own kernels, compiled again
                try:  # the lowering asks at the first call (Numba compiles then)
                    fn = sg.compile(expr, args, cache_dir=os.path.join(scratch, f"{name}-{k}"),
                                    strategy="straight")
                    fn.value_and_grad_floats(*x)
                finally:
                    simd.vector_doubles = host
                source = str(fn).rsplit(": ", 1)[1][:-1]
                with open(source, encoding="utf-8") as f:
                    packed[v] = "_packs = (" in f.read()
                calls[v] = (lambda f=fn.value_and_grad_floats, x=x: f(*x))
            times = best_times(calls, options.rounds, 200)
            for v, t in times.items():
                every[v][name] = t
            base = times["none"]
            cells = [f"{v}: {times[v] * 1e9:.0f} ns ({times[v] / base:.2f})"
                     + ("" if packed[v] else " -") for v in variants]
            worst = max([worst, *((times[v] / base, f"{name} at {v}") for v in variants
                                  if packed[v])])  # (an unpacked twin's ratio is noise)
            print(f"{name} ({sg.count_ops(expr)} ops): unpacked {base * 1e9:.0f} ns; "
                  + ", ".join(cells), flush=True)
    print(f"worst ratio of a packed kernel {worst[0]:.2f} ({worst[1]}); load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    for v, times in every.items():
        if times:
            print(summary(v, times))


if __name__ == "__main__":
    main()
