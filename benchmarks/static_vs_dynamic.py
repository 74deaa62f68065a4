"""Time per training step: dynamic (eager, graph rebuilt every step) vs static (one compiled
step kernel), on the text's linear model, a linear model with 5 features and 20 points, and a
3->4->1 tanh network on 10 points.

    python benchmarks/static_vs_dynamic.py [--repeats 7] [--steps 50]

Each cell is the median over `repeats` runs of (time for `steps` steps) / `steps`. Compile
times are once per model and are reported separately. Writes the Markdown table to
benchmarks/results/static_vs_dynamic.md and prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import symgraph.dynamic as dyn
import symgraph.static as st
from symgraph.api import compile as compile_kernel
from symgraph.ir.evaluate import count_ops
from symgraph.runtime.loading import ENV_CACHE_DIR

RESULTS = Path(__file__).resolve().parent / "results" / "static_vs_dynamic.md"
LR = 0.01


def models():
    """(name, data arrays, parameter arrays, loss written once for both styles)."""
    rng = np.random.default_rng(0)

    def linear(X, y, W, b):
        prediction = X @ W + b if X.ndim == 2 else W * X + b
        return (prediction - y) ** 2

    def net(X, y, W1, b1, W2, b2):
        return ((X @ W1 + b1).tanh() @ W2 + b2 - y) ** 2

    yield ("text's model (1 point)", linear, [np.array([1.0]), np.array([2.0])],
           [np.array([2.0]), np.array([1.0])])
    yield ("linear, 5 features x 20 points", linear,
           [rng.normal(size=(20, 5)), rng.normal(size=20)], [rng.normal(size=5), np.array(0.0)])
    yield ("tanh net 3->4->1, 10 points", net,
           [rng.normal(size=(10, 3)), rng.normal(size=(10, 1))],
           [rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 1)),
            rng.normal(size=1)])


def per_step(step, steps: int, repeats: int) -> float:
    step()  # warm up (and compile, for the static styles)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def dynamic_step(loss_of, data, params):
    leaves = [dyn.tensor(p, requires_grad=True) for p in params]
    inputs = [dyn.tensor(d) for d in data]
    sgd = dyn.SGD(leaves, lr=LR)

    def step():
        sgd.zero_grad()
        loss = loss_of(*inputs, *leaves).mean()
        loss.backward()
        sgd.step()
        return loss.item()

    return step


def static_step(loss_of, data, params, backend):
    graph = st.Graph()
    with graph.as_default():
        placeholders = [st.placeholder(f"d{i}", d.shape) for i, d in enumerate(data)]
        variables = [st.Variable(p, name=f"p{i}") for i, p in enumerate(params)]
        loss = st.reduce_mean(loss_of(*placeholders, *variables))
        train = st.GradientDescentOptimizer(LR).minimize(loss)
    sess = st.Session(graph, backend=backend)
    feed = dict(zip(placeholders, data))
    outputs = loss.flat_nodes() + [n for _, new in train.updates for n in new.flat_nodes()]
    # The same step kernel called directly (no Session): what the kernel itself costs.
    kernel = compile_kernel(outputs, [n for t in variables + placeholders for n in t.flat_nodes()],
                            wrt=[], backend=backend)
    point = np.concatenate([np.ravel(a) for a in params + data])
    return (lambda: sess.run([train, loss], feed)), (lambda: kernel(point)), count_ops(outputs)


def frozen_step(loss_of, data, params):
    """The dynamic loss frozen into a kernel (value and gradient), update in NumPy."""
    values = [p.copy() for p in params]
    k = len(data)
    frozen = dyn.freeze(lambda *a: loss_of(*a[:k], *a[k:]).mean(), *data, *values,
                        wrt=range(k, k + len(params)))

    def step():
        loss, grads = frozen.value_and_grad(*data, *values)
        for v, g in zip(values, grads):
            v -= LR * g
        return loss

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    # A fresh kernel cache, so the compile column measures a real compile, not a cache hit.
    os.environ[ENV_CACHE_DIR] = tempfile.mkdtemp(prefix="symgraph-bench-")
    rows = []
    for name, loss_of, data, params in models():
        dynamic = per_step(dynamic_step(loss_of, data, params), args.steps, args.repeats)
        python_step, _, size = static_step(loss_of, data, params, "python")
        start = time.perf_counter()
        python_step()  # the first run generates and loads the step kernel
        python_compile = time.perf_counter() - start
        static_python = per_step(python_step, args.steps * 40, args.repeats)
        numba_step, numba_kernel, _ = static_step(loss_of, data, params, "numba")
        start = time.perf_counter()
        numba_step()  # the first run compiles the step kernel
        compile_seconds = time.perf_counter() - start
        static_numba = per_step(numba_step, args.steps * 200, args.repeats)
        kernel_alone = per_step(numba_kernel, args.steps * 200, args.repeats)
        frozen = per_step(frozen_step(loss_of, data, params), args.steps * 200, args.repeats)
        rows.append((name, size, dynamic, static_python, static_numba, kernel_alone, frozen,
                     python_compile, compile_seconds))
    lines = ["| model | ops in step kernel | dynamic (eager) | static, Python kernel | "
             "static, Numba kernel | of which the kernel call | frozen dynamic (Numba) + "
             "NumPy update | dynamic / static Numba | first run (builds the kernel): Python | "
             "Numba |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, size, dynamic, py, nb, alone, frozen, py_compile, nb_compile in rows:
        lines.append(f"| {name} | {size} | {dynamic * 1e6:,.0f} µs | {py * 1e6:,.1f} µs | "
                     f"{nb * 1e6:,.1f} µs | {alone * 1e6:,.1f} µs | {frozen * 1e6:,.1f} µs | "
                     f"{dynamic / nb:,.0f}x | {py_compile * 1e3:,.0f} ms | {nb_compile:.2f} s |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (f"\nTime per training step (forward, gradient, SGD update), median of "
            f"{args.repeats} repeats; Python {platform.python_version()}, NumPy "
            f"{np.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{load:.1f} at the end. Measured by `python benchmarks/static_vs_dynamic.py`.\n")
    text = "\n".join(lines) + "\n" + note
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
