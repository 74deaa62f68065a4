"""What every tool hands the harness (a `Prepared`), and the two Numba tools: symgraph itself and
the hand-written kernels. Peers live in benchmarks/peers.py.

A tool's setup is timed in stages (build, differentiate + codegen, compile on first call...);
the worker adds the first full-size batch call (compiles the batch kernel) minus one run of it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.measure import stage, stopwatch
from benchmarks.workloads import build, prepared, workload


@dataclass
class Prepared:
    label: str
    point_call: Callable[[], Any]  # timed: value+gradient at the check point, as users call it
    value_grad: Callable[[np.ndarray], tuple[float, np.ndarray]]  # for the check
    batch_vg: Callable[[np.ndarray], tuple[Any, Any]]  # rows -> (values, gradients (N, k))
    batch_value: Callable[[np.ndarray], Any] | None
    threads: Callable[[int], None] | None  # None: the tool computes a batch on one thread
    setup: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    ops: tuple[int | None, int | None] = (None, None)  # value, value+gradient programs
    notes: list[str] = field(default_factory=list)
    extra_calls: dict[str, Callable[[], Any]] = field(default_factory=dict)
    extra_batches: dict[str, Callable[[np.ndarray], Any]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    pin_for_one_core: bool = False  # "1 core" by CPU affinity (no runtime thread setting)
    # After the first batch, untimed in setup: what makes the tool's later calls run at full
    # speed now (symgraph interpreted first: its straight-line kernels, timed as "switch_s").
    settle: Callable[[], Any] | None = None


def ast_op_count(source: str) -> int:
    """Arithmetic operations in Python source: binary/unary operators and function calls."""
    return sum(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Call)) for n in ast.walk(ast.parse(
        source)))


def numba_threads(k: int) -> None:
    import numba

    numba.set_num_threads(min(k, numba.config.NUMBA_NUM_THREADS))


# -- symgraph ------------------------------------------------------------------------------------


def prepare_symgraph(name: str, point: np.ndarray, cache_dir: str, **_: Any) -> list[Prepared]:
    import symgraph as sg

    prepared(name)  # untimed: e.g. the pendulum's mechanics derivation
    setup: dict[str, float] = {}
    (expr, args) = stage(setup, "build", lambda: build(name))
    fn = stage(setup, "differentiate+codegen", lambda: sg.compile(expr, args,
                                                                     cache_dir=cache_dir))
    floats = tuple(float(v) for v in point)
    stage(setup, "jit 1-point", lambda: fn.value_and_grad(*floats))
    x, out = np.array(point, dtype=float), np.empty(1 + len(args))
    counts = fn.op_counts()
    details = {"dag_ops": sg.count_ops(expr), "arguments": len(args),
               "strategy": getattr(fn, "strategy", "straight")}
    # The fastest documented 1-point form: value_and_grad_floats (floats in, the value and a
    # tuple of floats out, as SymPy + njit's list of floats); value_and_grad with floats and
    # with one array are timed too (among the extra calls).
    prepared_ = Prepared(
        "symgraph", lambda: fn.value_and_grad_floats(*floats),
        lambda p: fn.value_and_grad(*[float(v) for v in p]),
        fn.value_and_grad, fn, numba_threads, setup,
        (counts["value"], counts["value_grad"]), details=details,
        extra_calls={"floats": lambda: fn.value_and_grad(*floats),
                     "array": lambda: fn.value_and_grad(x)})

    def settle() -> None:
        _switch(fn, x)
        row, batch = (k.unchecked for k in fn.kernels("value_grad"))  # what the API calls
        details["path"] = str(fn.path)
        prepared_.extra_calls["kernel"] = lambda: row(x, out)
        prepared_.extra_batches["kernel"] = lambda X, o=[None]: batch(
            X, _out(o, X.shape[0], out.size))

    prepared_.settle = settle
    return [prepared_]


def _switch(fn: Any, x: np.ndarray) -> None:
    """An interpreted-first function's straight-line kernels, made and compiled (or loaded)
    now: what its calls switch to once the interpreter has lost what the switch costs."""
    if not hasattr(fn._built, "pending"):
        return
    for pending in fn._built.pending.values():
        pending.lost_ns = float("inf")  # the next call of each kernel switches
    for name, row in fn._rows.items():
        size = len(next(p for p in fn.programs if p.name == name).outputs)
        row.call(x, np.empty(size))
        fn._batches[name](x[None, :].copy(), np.empty((1, size)))


def _out(cache: list, rows: int, width: int) -> np.ndarray:
    # The raw batch kernel writes into a preallocated array (kept between calls).
    if cache[0] is None or cache[0].shape != (rows, width):
        cache[0] = np.empty((rows, width))
    return cache[0]


def warm_symgraph(name: str, point: np.ndarray, X: np.ndarray, cache_dir: str) -> dict:
    """Setup again in this (fresh) process, from the on-disk cache."""
    [p] = prepare_symgraph(name, point, cache_dir)
    first, _ = stopwatch(lambda: p.batch_vg(X))
    if p.settle is not None:
        p.settle()
    again, _ = stopwatch(lambda: p.batch_vg(X))
    return {**p.setup, "first batch (compile)": max(0.0, first - again)}


# -- hand-written Numba: the practical limit -------------------------------------------------------


def prepare_handwritten(name: str, point: np.ndarray, **_: Any) -> list[Prepared]:
    kind = workload(name).handwritten
    if kind is None:
        return []
    setup: dict[str, float] = {}
    kernels = stage(setup, "import", lambda: __import__("benchmarks.handwritten",
                                                            fromlist=["KERNELS"]).KERNELS)
    row, vg_batch, v_batch = kernels[kind]
    x, out = np.array(point, dtype=float), np.empty(1 + point.size)
    stage(setup, "jit 1-point", lambda: row(x, out))

    def value_grad(p: np.ndarray) -> tuple[float, np.ndarray]:
        o = np.empty(1 + p.size)
        row(np.ascontiguousarray(p, dtype=float), o)
        return o[0], o[1:]

    def batch_vg(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        o = np.empty((X.shape[0], 1 + X.shape[1]))
        vg_batch(X, o)
        return o[:, 0], o[:, 1:]

    def batch_value(X: np.ndarray) -> np.ndarray:
        o = np.empty((X.shape[0], 1))
        v_batch(X, o)
        return o[:, 0]

    return [Prepared("hand-written Numba", lambda: row(x, out), value_grad, batch_vg,
                     batch_value, numba_threads, setup,
                     notes=["raw kernel call (preallocated arrays)"])]


def warm_handwritten(name: str, point: np.ndarray, X: np.ndarray, **_: Any) -> dict:
    [p] = prepare_handwritten(name, point)
    first, _ = stopwatch(lambda: p.batch_vg(X))
    again, _ = stopwatch(lambda: p.batch_vg(X))
    return {**p.setup, "first batch (compile)": max(0.0, first - again)}

