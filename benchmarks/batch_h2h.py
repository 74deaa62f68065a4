"""Batch value+gradient, one core, symgraph against one peer in one process (SymEngine's LLVM
Lambdify unless ``--peer`` names another of benchmarks.peers: jax, torch, casadi, sympy): the
two interleaved call by call, CPU time (time.process_time), so machine load moves both alike.
Usage: ``python -m benchmarks.batch_h2h [--peer jax] family@n ...`` (20,000 points of the
family's box); prints points a second for each and their ratio (median of 5 pairs, and of the
fastest of each), symgraph's strategy, both setups (wall: compile through the first batch,
cold unless the caches hold it; the peer's preparation) and the load average. The process is
pinned to one CPU, so a peer with threads of its own (JAX's XLA) computes on one core too.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np


def _cpu(f, X) -> float:
    start = time.process_time()
    f(X)
    return time.process_time() - start


def main(names: list[str], points: int = 20_000, peer: str = "symengine") -> None:
    if hasattr(os, "sched_setaffinity"):  # before a peer's import starts its thread pools
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    import numba

    import symgraph as sg

    from . import families, peers
    from .tools import _switch

    numba.set_num_threads(1)
    for name in names:
        family, n = families.parse_name(name)
        expr, args = family.make(n)
        low, high = family.box(len(args))
        X = np.random.default_rng(1).uniform(low, high, (points, len(args)))
        start = time.perf_counter()
        fn = sg.compile(expr, args, cache_dir=os.environ.get("SYMGRAPH_CACHE_DIR"))
        fn.value_and_grad(X[0])
        _switch(fn, X[0])  # an interpreted-first function's kernels, made now
        fn.value_and_grad(X)
        setup = time.perf_counter() - start
        start = time.perf_counter()
        engine = getattr(peers, f"prepare_{peer}")(expr, args, X[0])[0]
        engine_setup = time.perf_counter() - start
        engine.batch_vg(X)
        (v1, g1), (v2, g2) = fn.value_and_grad(X), engine.batch_vg(X)
        agree = (np.allclose(v1, v2, rtol=1e-8, equal_nan=True)
                 and np.allclose(g1, g2, rtol=1e-6, atol=1e-9, equal_nan=True))
        ours, theirs = [], []
        for _ in range(5):
            ours.append(_cpu(fn.value_and_grad, X))
            theirs.append(_cpu(engine.batch_vg, X))
        a, b = float(np.median(ours)), float(np.median(theirs))
        print(f"{name}: symgraph {points / a / 1e3:.0f} k/s, {engine.label} {points / b / 1e3:.0f}"
              f" k/s, {b / a:.2f}x (fastest of each {min(theirs) / min(ours):.2f}x),"
              f" {_kind(fn)}, setup {setup:.2f} s ({engine.label} {engine_setup:.2f} s),"
              f" load {os.getloadavg()[0]:.1f}"
              + ("" if agree else ", RESULTS DIFFER"), flush=True)


def _kind(fn) -> str:
    """How the batches run: fused (a sum's terms kind by kind), tape, or straight-line."""
    if getattr(fn._built, "separable", None) is not None:
        return "fused"
    return getattr(fn, "strategy", "?")


if __name__ == "__main__":
    argv = sys.argv[1:]
    chosen = "symengine"
    if argv[:1] == ["--peer"]:
        chosen, argv = argv[1], argv[2:]
    main(argv, peer=chosen)
