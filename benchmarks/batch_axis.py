"""A training step over N rows: the text's model (y = W*x + b, MSE) and a 4-8-1 tanh MLP, for
symgraph static (a None batch dimension: a loop over rows), symgraph dynamic, TF1
(tensorflow.compat.v1, if installed), JAX jit, PyTorch eager and NumPy by hand; N = 10^3,
10^5, 10^6; one thread and all threads; setup (graph to the end of the first step) and step.

    python benchmarks/batch_axis.py [--sizes 1000 100000 1000000] [--frameworks ...]

Every cell runs in its own process (threads are set before the framework loads). Everything
computes in float64 (JAX with jax_enable_x64), one gradient-descent step of lr 0.01 a step.
symgraph's setup is shown cold (an empty kernel cache: Numba compiles) and warm (a second
process, the same cache); its modules are byte-compiled first, as an installed package's
are. Writes benchmarks/results/batch_axis.md (or --out) and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "batch_axis.md"
FRAMEWORKS = ["symgraph static", "symgraph dynamic", "TF1", "JAX jit", "PyTorch eager",
              "NumPy by hand"]
MODELS = ["text", "mlp"]
LR = 0.01


def data(model: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    if model == "text":
        x = rng.normal(size=n)
        return x, 3.0 * x + 1.0 + 0.1 * rng.normal(size=n)
    x = rng.normal(size=(n, 4))
    return x, np.sin(x.sum(axis=1, keepdims=True))


def params(model: str) -> list[np.ndarray]:
    if model == "text":
        return [np.array([2.0]), np.array([1.0])]
    rng = np.random.default_rng(1)
    return [rng.normal(size=(4, 8)) * 0.5, np.zeros(8), rng.normal(size=(8, 1)) * 0.5,
            np.zeros(1)]


# -- one step per framework: make(model, x, y) -> step() ---------------------------------------


def make_static(model, x, y):
    import symgraph.static as tf

    X = tf.placeholder(tf.float64, (None,) + x.shape[1:], name="x")
    Y = tf.placeholder(tf.float64, (None,) + y.shape[1:], name="y")
    ps = [tf.Variable(p) for p in params(model)]
    if model == "text":
        pred = ps[0] * X + ps[1]
    else:
        pred = tf.matmul(tf.tanh(tf.matmul(X, ps[0]) + ps[1]), ps[2]) + ps[3]
    loss = tf.reduce_mean(tf.square(pred - Y))
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
    sess = tf.Session()
    feed = {X: x, Y: y}
    return lambda: sess.run([train, loss], feed)[1]


def torch_style_step(torch, SGD, model, x, y):
    """One PyTorch program, run by symgraph.dynamic and by PyTorch itself (`torch` is either)."""
    ps = [torch.tensor(p, requires_grad=True) for p in params(model)]
    X, Y = torch.tensor(x), torch.tensor(y)
    opt = SGD(ps, lr=LR)

    def step():
        opt.zero_grad()
        if model == "text":
            pred = ps[0] * X + ps[1]
        else:
            pred = torch.tanh(X @ ps[0] + ps[1]) @ ps[2] + ps[3]
        loss = ((pred - Y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def make_dynamic(model, x, y):
    import symgraph.dynamic as torch

    return torch_style_step(torch, torch.SGD, model, x, y)


def make_tf1(model, x, y):
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    X = tf.placeholder(tf.float64, (None,) + x.shape[1:])
    Y = tf.placeholder(tf.float64, (None,) + y.shape[1:])
    ps = [tf.Variable(p) for p in params(model)]
    if model == "text":
        pred = ps[0] * X + ps[1]
    else:
        pred = tf.matmul(tf.tanh(tf.matmul(X, ps[0]) + ps[1]), ps[2]) + ps[3]
    loss = tf.reduce_mean(tf.square(pred - Y))
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
    threads = int(os.environ["BENCH_THREADS"])
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    sess = tf.Session(config=config)
    sess.run(tf.global_variables_initializer())
    feed = {X: x, Y: y}
    return lambda: sess.run([train, loss], feed)[1]


def make_jax(model, x, y):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def loss_of(ps, X, Y):
        if model == "text":
            pred = ps[0] * X + ps[1]
        else:
            pred = jnp.tanh(X @ ps[0] + ps[1]) @ ps[2] + ps[3]
        return jnp.mean((pred - Y) ** 2)

    @jax.jit
    def update(ps, X, Y):
        loss, grads = jax.value_and_grad(loss_of)(ps, X, Y)
        return [p - LR * g for p, g in zip(ps, grads)], loss

    state = {"ps": [jnp.asarray(p) for p in params(model)]}
    X, Y = jnp.asarray(x), jnp.asarray(y)

    def step():
        state["ps"], loss = update(state["ps"], X, Y)
        return float(loss.block_until_ready())
    return step


def make_torch(model, x, y):
    import torch

    torch.set_num_threads(int(os.environ["BENCH_THREADS"]))
    return torch_style_step(torch, torch.optim.SGD, model, x, y)


def make_numpy(model, x, y):
    ps = params(model)
    n = x.shape[0]

    def step():
        if model == "text":
            r = ps[0] * x + ps[1] - y
            loss = np.mean(r * r)
            g = 2.0 / n * r
            grads = [np.array([np.dot(g, x)]), np.array([g.sum()])]
        else:
            h = np.tanh(x @ ps[0] + ps[1])
            r = h @ ps[2] + ps[3] - y
            loss = np.mean(r * r)
            g = 2.0 / n * r
            gh = (g @ ps[2].T) * (1.0 - h * h)
            grads = [x.T @ gh, gh.sum(0), h.T @ g, g.sum(0)]
        for p, d in zip(ps, grads):
            p -= LR * d
        return float(loss)
    return step


MAKERS = {"symgraph static": make_static, "symgraph dynamic": make_dynamic, "TF1": make_tf1,
          "JAX jit": make_jax, "PyTorch eager": make_torch, "NumPy by hand": make_numpy}


def worker(framework: str, model: str, n: int) -> dict:
    if framework.startswith("symgraph"):
        import numba

        numba.set_num_threads(int(os.environ["BENCH_THREADS"]))
    x, y = data(model, n)
    start, cpu = time.perf_counter(), time.process_time()
    step = MAKERS[framework](model, x, y)
    first = step()
    setup, setup_cpu = time.perf_counter() - start, time.process_time() - cpu
    repeats = max(5, min(200, int(3e6 // (n * (1 if model == "text" else 8)))))
    times, last = [], first
    for _ in range(repeats):
        t = time.perf_counter()
        last = step()
        times.append(time.perf_counter() - t)
    return {"setup": setup, "setup_cpu": setup_cpu, "step": statistics.median(times),
            "loss0": first, "loss": last}


def run_cell(framework: str, model: str, n: int, threads: int, cache: str) -> dict | None:
    env = dict(os.environ, BENCH_THREADS=str(threads), SYMGRAPH_CACHE_DIR=cache,
               NUMBA_CACHE_DIR=os.path.join(cache, "numba"), OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               TF_CPP_MIN_LOG_LEVEL="3")
    if threads == 1:
        env["XLA_FLAGS"] = ("--xla_cpu_multi_thread_eigen=false "
                            "intra_op_parallelism_threads=1")
    code = ("import json, sys; from benchmarks.batch_axis import worker; "
            f"print('RESULT', json.dumps(worker({framework!r}, {model!r}, {n}))); "
            "sys.stdout.flush()")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=900, cwd=Path(__file__).resolve().parent.parent)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    print(f"  {framework} {model} {n} {threads}: failed\n{done.stderr[-600:]}", file=sys.stderr)
    return None


def versions() -> str:
    found = [f"Python {platform.python_version()}"]
    import importlib.metadata as md

    for name in ("numpy", "numba", "jax", "torch", "tensorflow-cpu"):
        try:
            found.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000, 1_000_000])
    parser.add_argument("--frameworks", nargs="+", default=FRAMEWORKS)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help="the table's file (default: benchmarks/results/batch_axis.md)")
    args = parser.parse_args()
    # symgraph's modules byte-compiled first, as an installed package's are (pip compiles
    # them; numpy, numba, jax, torch and tensorflow are read from theirs): with
    # PYTHONDONTWRITEBYTECODE set and no __pycache__, every cell would compile symgraph's
    # source again, 0.1-0.3 s of its setup that no user pays.
    import compileall

    import symgraph

    compileall.compile_dir(Path(symgraph.__file__).resolve().parent, quiet=1)
    rows = []
    for model in MODELS:
        for n in args.sizes:
            for framework in args.frameworks:
                cells = []
                for threads in args.threads:
                    with tempfile.TemporaryDirectory() as cache:
                        cold = run_cell(framework, model, n, threads, cache)
                        warm = run_cell(framework, model, n, threads, cache) \
                            if framework.startswith("symgraph") and cold else None
                    cells.append((cold, warm))
                rows.append((model, n, framework, cells))
                print(model, n, framework, [(c and round(c["step"] * 1e3, 3)) for c, _ in cells],
                      flush=True)
    lines = [f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"{os.cpu_count()} cores ({platform.processor() or platform.platform()}); "
             f"{versions()}. Median step; setup = graph to the end of the first step "
             "(symgraph: cold cache / warm cache), in wall time and in the process's CPU "
             "time (what other jobs on the machine do not inflate). float64 everywhere. "
             f"Load average (1, 5, 15 min) at the end: {os.getloadavg()[0]:.1f}, "
             f"{os.getloadavg()[1]:.1f}, {os.getloadavg()[2]:.1f}.", ""]
    head = "| model | N | framework |" + "".join(
        f" setup s ({t} thr) | setup CPU s ({t} thr) | step ms ({t} thr) |"
        for t in args.threads)
    lines += [head, "|" + " --- |" * (3 + 3 * len(args.threads))]
    names = {"text": "text's W*x+b", "mlp": "MLP 4-8-1 tanh"}
    for model, n, framework, cells in rows:
        text = f"| {names[model]} | {n:,} | {framework} |"
        for cold, warm in cells:
            if cold is None:
                text += " - | - | - |"
                continue
            setup = f"{cold['setup']:.2f}" + (f" / {warm['setup']:.2f}" if warm else "")
            cpu = f"{cold['setup_cpu']:.2f}" + (f" / {warm['setup_cpu']:.2f}" if warm else "")
            step = min(cold["step"], warm["step"]) if warm else cold["step"]
            text += f" {setup} | {cpu} | {step * 1e3:.3f} |"
        lines.append(text)
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
