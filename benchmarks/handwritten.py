"""Hand-written Numba value+gradient kernels: the "practical limit" line of the suite.

Written as a careful user would (loops, no temporaries arrays, the same IEEE flags as symgraph's
kernels: ``error_model="numpy"``, no fastmath), with the argument order of the workloads. Each
workload gets ``vg_row(x, out)``, ``vg_batch(X, OUT)`` (parallel) and ``v_batch(X, OUT)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from benchmarks.workloads import MLP_SHAPE, mlp_data

_JIT = {"cache": True, "error_model": "numpy"}

# -- x**2 + 2x + 1 -------------------------------------------------------------------------------


@njit(**_JIT)
def polynomial_vg(x, out):
    v = x[0]
    out[0] = v * v + 2.0 * v + 1.0
    out[1] = 2.0 * v + 2.0


@njit(**_JIT)
def polynomial_v(x, out):
    v = x[0]
    out[0] = v * v + 2.0 * v + 1.0


# -- Rosenbrock, any n ---------------------------------------------------------------------------


@njit(**_JIT)
def rosenbrock_vg(x, out):
    n = x.shape[0]
    f = 0.0
    for i in range(n):
        out[i + 1] = 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        f += 100.0 * a * a + b * b
        out[i + 1] += -400.0 * a * x[i] - 2.0 * b
        out[i + 2] += 200.0 * a
    out[0] = f


@njit(**_JIT)
def rosenbrock_v(x, out):
    f = 0.0
    for i in range(x.shape[0] - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        f += 100.0 * a * a + b * b
    out[0] = f


# -- 2-layer tanh MLP, mean squared error; x = [W1 (hidden x inputs, row-major), b1, w2, b2] ----

_INPUTS, _HIDDEN, _POINTS = MLP_SHAPE
_DATA, _TARGETS = mlp_data()  # global arrays are compile-time constants to Numba


@njit(**_JIT)
def mlp_vg(x, out):
    n_in, n_h = _INPUTS, _HIDDEN
    b1 = n_h * n_in
    w2 = b1 + n_h
    b2 = w2 + n_h
    scale = 1.0 / _POINTS
    for k in range(out.shape[0]):
        out[k] = 0.0
    h = np.empty(n_h)  # small, per call: what a user would write (a loop over stack scalars
    # would need unrolling by hand)
    f = 0.0
    for p in range(_POINTS):
        pred = x[b2]
        for i in range(n_h):
            z = x[b1 + i]
            for j in range(n_in):
                z += x[i * n_in + j] * _DATA[p, j]
            h[i] = math.tanh(z)
            pred += x[w2 + i] * h[i]
        r = pred - _TARGETS[p]
        f += r * r
        d = 2.0 * r * scale
        out[1 + b2] += d
        for i in range(n_h):
            out[1 + w2 + i] += d * h[i]
            dz = d * x[w2 + i] * (1.0 - h[i] * h[i])
            out[1 + b1 + i] += dz
            for j in range(n_in):
                out[1 + i * n_in + j] += dz * _DATA[p, j]
    out[0] = f * scale


@njit(**_JIT)
def mlp_v(x, out):
    n_in, n_h = _INPUTS, _HIDDEN
    b1 = n_h * n_in
    w2 = b1 + n_h
    f = 0.0
    for p in range(_POINTS):
        pred = x[w2 + n_h]
        for i in range(n_h):
            z = x[b1 + i]
            for j in range(n_in):
                z += x[i * n_in + j] * _DATA[p, j]
            pred += x[w2 + i] * math.tanh(z)
        r = pred - _TARGETS[p]
        f += r * r
    out[0] = f / _POINTS


# -- batches: one parallel loop per kernel (explicit, so each is cached on its own) --------------


@njit(parallel=True, **_JIT)
def polynomial_vg_batch(X, OUT):
    for i in prange(X.shape[0]):
        polynomial_vg(X[i], OUT[i])


@njit(parallel=True, **_JIT)
def polynomial_v_batch(X, OUT):
    for i in prange(X.shape[0]):
        polynomial_v(X[i], OUT[i])


@njit(parallel=True, **_JIT)
def rosenbrock_vg_batch(X, OUT):
    for i in prange(X.shape[0]):
        rosenbrock_vg(X[i], OUT[i])


@njit(parallel=True, **_JIT)
def rosenbrock_v_batch(X, OUT):
    for i in prange(X.shape[0]):
        rosenbrock_v(X[i], OUT[i])


@njit(parallel=True, **_JIT)
def mlp_vg_batch(X, OUT):
    for i in prange(X.shape[0]):
        mlp_vg(X[i], OUT[i])


@njit(parallel=True, **_JIT)
def mlp_v_batch(X, OUT):
    for i in prange(X.shape[0]):
        mlp_v(X[i], OUT[i])


# name -> (value+gradient row kernel, its batch, value batch)
KERNELS = {
    "polynomial": (polynomial_vg, polynomial_vg_batch, polynomial_v_batch),
    "rosenbrock": (rosenbrock_vg, rosenbrock_vg_batch, rosenbrock_v_batch),
    "mlp": (mlp_vg, mlp_vg_batch, mlp_v_batch),
}
