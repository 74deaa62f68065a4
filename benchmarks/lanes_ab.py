"""A/B of lane-kernel constants: each workload compiled once per variant in one process (a
cache folder each), the raw batch kernels (preallocated output) called in turns, best of many
calls a size, one core. On a VM whose memory bandwidth moves with its neighbours, separate
processes disagreed with themselves by up to 1.5x; calls in turns see the same machine.

    python -m benchmarks.lanes_ab composition@79,arrhenius@31 \
        "batch.SERIAL_SLOT_BYTES=32768;batch.SERIAL_SLOT_BYTES=65536"
    python -m benchmarks.lanes_ab fpu_chain@38 \
        "lanes.PREFETCH_COLUMNS=100000;lanes.PREFETCH_COLUMNS=32" --sizes 2048,20000,100000

A variant sets constants of symgraph.backends.numba.batch (``batch.``) or of
symgraph.backends.numba.runtime.lanes (``lanes.``, read as kernels are lowered); ``;``
separates variants, ``,`` constants within one. Prints ns a point per variant and size, and
"(same source)" where the variants of ``batch.`` constants wrote the same kernel (their
differences are the noise). Results: benchmarks/results/lane_memory.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from benchmarks import families
from benchmarks.tools import _switch


def _settings(text: str) -> list[tuple[object, str, int]]:
    from symgraph.backends.numba import batch
    from symgraph.backends.numba.runtime import lanes

    modules = {"batch": batch, "lanes": lanes}
    out = []
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        module, _, constant = name.partition(".")
        out.append((modules[module], constant, int(value)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", help="family@n, comma-separated")
    parser.add_argument("variants", help='e.g. "batch.SLOT_BYTES=32768;batch.SLOT_BYTES=65536"')
    parser.add_argument("--sizes", default="2048,20000")
    args = parser.parse_args(argv)
    pinned = os.sched_getaffinity(0) if hasattr(os, "sched_setaffinity") else None
    if pinned is not None:  # one core, given back at the end (a caller's process goes on)
        os.sched_setaffinity(0, {max(pinned)})
    try:
        _run(args)
    finally:
        if pinned is not None:
            os.sched_setaffinity(0, pinned)


def _run(args: argparse.Namespace) -> None:
    import numba

    import symgraph as sg

    numba.set_num_threads(1)
    variants = [_settings(v) for v in args.variants.split(";")]
    sizes = [int(s) for s in args.sizes.split(",")]
    folder = tempfile.mkdtemp(prefix="lanes_ab_")
    for name in args.workloads.split(","):
        family, n = families.parse_name(name)
        expr, inputs = family.make(n)
        low, high = family.box(len(inputs))
        X = np.random.default_rng(1).uniform(low, high, (max(sizes), len(inputs)))
        kernels, sources = [], set()
        for k, settings in enumerate(variants):
            saved = [(m, c, getattr(m, c)) for m, c, _ in settings]
            for module, constant, value in settings:
                setattr(module, constant, value)
            try:  # compiled (and its first batch made) under the variant's constants
                fn = sg.compile(expr, inputs, cache_dir=os.path.join(folder, f"{name}-{k}"))
                fn.value_and_grad(X[0])
                _switch(fn, X[0])
                fn.value_and_grad(X[:64])
            finally:
                for module, constant, value in saved:
                    setattr(module, constant, value)
            kernels.append(fn._batches["value_grad"])
            sources.add(fn._built.source)
        row = []
        for size in sizes:
            Xs = np.ascontiguousarray(X[:size])
            out = np.empty((size, len(inputs) + 1))
            best = [float("inf")] * len(kernels)
            for _ in range(max(10, 300_000 // size)):
                for k, kernel in enumerate(kernels):
                    start = time.perf_counter()
                    kernel(Xs, out)
                    best[k] = min(best[k], time.perf_counter() - start)
            row.append(" ".join(f"{b / size * 1e9:7.1f}" for b in best))
        # The same source under constants of `batch` only: the same kernels (timing noise).
        same = len(sources) == 1 and all(m.__name__.endswith(".batch")
                                         for settings in variants for m, _, _ in settings)
        print(f"{name:24s}", " | ".join(row), "(same source)" if same else "", flush=True)


if __name__ == "__main__":
    main()
