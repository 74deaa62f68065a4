"""NumPy-written functions (textbook test functions and the benchmark's workload families), each
with the same mathematics written by hand with symgraph's own functions on the symbols a trace
names (``x[0]``, ``W[1,2]``...), an example and a sampler of points. tests/test_numpy_trace.py
traces, differentiates and compiles them and checks them against NumPy itself (values, finite
differences) and against the hand-written form."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import symgraph as sg

RNG_DATA = np.random.default_rng(1234)
X_DATA = RNG_DATA.normal(size=(6, 3))  # a design matrix the models read as constants
Y_BINARY = (RNG_DATA.random(6) > 0.5).astype(float)
Y_COUNTS = RNG_DATA.poisson(2.0, size=6).astype(float)
SAMPLES = RNG_DATA.normal(1.0, 2.0, size=8)
A_SPD = (lambda m: m @ m.T + 3 * np.eye(4))(RNG_DATA.normal(size=(4, 4)))
B_VEC = RNG_DATA.normal(size=4)


def s(name: str):
    return sg.symbol(name)


def v(name: str, n: int) -> list:
    return [sg.symbol(f"{name}[{i}]") for i in range(n)]


def m(name: str, rows: int, cols: int) -> list[list]:
    return [[sg.symbol(f"{name}[{i},{j}]") for j in range(cols)] for i in range(rows)]


@dataclass
class Case:
    name: str
    f: Callable  # written with NumPy
    example: tuple
    hand: Callable[[], object]  # the same with sg functions: a node or a list of nodes
    sample: Callable[[np.random.Generator], tuple]


CASES: list[Case] = []


def case(example: tuple, sample: Callable, hand: Callable):
    def register(f: Callable) -> Callable:
        CASES.append(Case(f.__name__, f, example, hand, sample))
        return f

    return register


def _normal(*shapes, scale=1.0, loc=0.0):
    return lambda rng: tuple(
        float(rng.normal(loc, scale)) if shape == () else rng.normal(loc, scale, size=shape)
        for shape in shapes)


# -- textbook optimisation test functions -------------------------------------------------------


def _rosenbrock_hand():
    x = v("x", 6)
    return sg.add(*[100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(5)])


@case((np.zeros(6),), _normal((6,)), _rosenbrock_hand)
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rastrigin_hand():
    x = v("x", 5)
    return 10 * 5 + sg.add(*[xi ** 2 - 10 * sg.cos(2 * math.pi * xi) for xi in x])


@case((np.zeros(5),), _normal((5,)), _rastrigin_hand)
def rastrigin(x):
    return 10.0 * x.size + np.sum(x ** 2 - 10.0 * np.cos(2.0 * np.pi * x))


def _ackley_hand():
    x = v("x", 4)
    mean_sq = sg.add(*[xi ** 2 for xi in x]) / 4
    mean_cos = sg.add(*[sg.cos(2 * math.pi * xi) for xi in x]) / 4
    return -20 * sg.exp(-0.2 * sg.sqrt(mean_sq)) - sg.exp(mean_cos) + 20 + math.e


@case((np.zeros(4),), _normal((4,)), _ackley_hand)
def ackley(x):
    return (-20.0 * np.exp(-0.2 * np.sqrt(np.mean(x ** 2))) - np.exp(np.mean(np.cos(2 * np.pi * x)))
            + 20.0 + np.e)


def _himmelblau_hand():
    x, y = s("x"), s("y")
    return (x ** 2 + y - 11) ** 2 + (x + y ** 2 - 7) ** 2


@case((), _normal((), ()), _himmelblau_hand)
def himmelblau(x, y):
    return (x ** 2 + y - 11) ** 2 + (x + y ** 2 - 7) ** 2


def _styblinski_hand():
    x = v("x", 5)
    return 0.5 * sg.add(*[xi ** 4 - 16 * xi ** 2 + 5 * xi for xi in x])


@case((np.zeros(5),), _normal((5,)), _styblinski_hand)
def styblinski_tang(x):
    return 0.5 * np.sum(np.power(x, 4) - 16 * np.square(x) + 5 * x)


def _quadratic_hand():
    x = v("x", 4)
    quad = sg.add(*[A_SPD[i, j] * x[i] * x[j] for i in range(4) for j in range(4)])
    return 0.5 * quad - sg.add(*[B_VEC[i] * x[i] for i in range(4)])


@case((np.zeros(4),), _normal((4,)), _quadratic_hand)
def quadratic_form(x, A=A_SPD, b=B_VEC):
    return 0.5 * x @ A @ x - b @ x


# -- energies ----------------------------------------------------------------------------------


def _lennard_jones_hand():
    p = m("p", 4, 3)
    total = []
    for i in range(4):
        for j in range(i + 1, 4):
            r2 = sg.add(*[(p[i][k] - p[j][k]) ** 2 for k in range(3)])
            inv6 = 1 / r2 ** 3
            total.append(4 * (inv6 * inv6 - inv6))
    return sg.add(*total)


def _lj_points(rng):
    grid = np.array([[0, 0, 0], [1.1, 0, 0], [0, 1.1, 0], [0, 0, 1.1]], dtype=float)
    return (grid + 0.05 * rng.normal(size=(4, 3)),)


@case((np.zeros((4, 3)),), _lj_points, _lennard_jones_hand)
def lennard_jones(p):
    energy = 0.0
    for i in range(len(p)):
        for j in range(i + 1, len(p)):
            r2 = np.sum((p[i] - p[j]) ** 2)
            inv6 = 1.0 / r2 ** 3
            energy = energy + 4.0 * (inv6 ** 2 - inv6)
    return energy


def _morse_hand():
    p = m("p", 3, 2)
    total = []
    for i in range(3):
        for j in range(i + 1, 3):
            r = sg.sqrt(sg.add(*[(p[i][k] - p[j][k]) ** 2 for k in range(2)]))
            total.append(2.0 * (1 - sg.exp(-1.5 * (r - 1.0))) ** 2)
    return sg.add(*total)


@case((np.zeros((3, 2)),), lambda rng: (np.array([[0, 0], [1, 0], [0, 1.2]]) +
                                         0.1 * rng.normal(size=(3, 2)),), _morse_hand)
def morse(p, depth=2.0, a=1.5, r0=1.0):
    diffs = p[:, None, :] - p[None, :, :]
    total = 0.0
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        r = np.linalg.norm(diffs[i, j])
        total = total + depth * (1.0 - np.exp(-a * (r - r0))) ** 2
    return total


def _coulomb_hand():
    q, pos = v("q", 3), m("r", 3, 2)
    pairs = [q[i] * q[j] / sg.hypot(pos[i][0] - pos[j][0], pos[i][1] - pos[j][1])
             for i in range(3) for j in range(i + 1, 3)]
    return sg.add(*pairs)


@case((np.zeros(3), np.zeros((3, 2))),
      lambda rng: (rng.normal(size=3), np.array([[0, 0], [1, 0], [0, 1.0]]) +
                   0.1 * rng.normal(size=(3, 2))), _coulomb_hand)
def coulomb(q, r):
    i, j = np.triu_indices(3, k=1)
    d = r[i] - r[j]
    return np.sum(q[i] * q[j] / np.hypot(d[:, 0], d[:, 1]))


def _springs_hand():
    x = v("x", 5)
    return sg.add(*[0.5 * 3.0 * (x[i + 1] - x[i] - 1.0) ** 2 for i in range(4)])


@case((np.zeros(5),), lambda rng: (np.arange(5.0) + 0.2 * rng.normal(size=5),), _springs_hand)
def spring_chain(x, k=3.0, rest=1.0):
    return np.sum(0.5 * k * (np.diff(x) - rest) ** 2)


def _pendulum_hand():
    t, w = s("theta"), s("omega")
    return 0.5 * 2.0 * 1.5 ** 2 * w ** 2 + 2.0 * 9.81 * 1.5 * (1 - sg.cos(t))


@case((), _normal((), ()), _pendulum_hand)
def pendulum_energy(theta, omega, mass=2.0, length=1.5, g=9.81):
    return 0.5 * mass * length ** 2 * omega ** 2 + mass * g * length * (1.0 - np.cos(theta))


# -- likelihoods -------------------------------------------------------------------------------


def _gauss_hand():
    mu, ls = s("mu"), s("log_sigma")
    sigma = sg.exp(ls)
    terms = [((xi - mu) / sigma) ** 2 for xi in SAMPLES]
    n = len(SAMPLES)
    return -0.5 * sg.add(*terms) - n * ls - 0.5 * n * math.log(2 * math.pi)


@case((), _normal((), (), scale=0.5), _gauss_hand)
def gaussian_loglik(mu, log_sigma, data=SAMPLES):
    sigma = np.exp(log_sigma)
    z = (data - mu) / sigma
    return -0.5 * np.sum(z ** 2) - data.size * log_sigma - 0.5 * data.size * np.log(2 * np.pi)


def _logistic_hand():
    w = v("w", 3)
    total = []
    for row, label in zip(X_DATA, Y_BINARY):
        z = sg.add(*[row[k] * w[k] for k in range(3)])
        total.append(sg.max(0.0, z) + sg.log1p(sg.exp(-sg.abs(z))) - label * z)
    return sg.add(*total)


@case((np.zeros(3),), _normal((3,)), _logistic_hand)
def logistic_nll(w, X=X_DATA, y=Y_BINARY):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z)


def _poisson_hand():
    w = v("w", 3)
    total = []
    for row, count in zip(X_DATA, Y_COUNTS):
        eta = sg.add(*[row[k] * w[k] for k in range(3)])
        total.append(count * eta - sg.exp(eta))
    return -sg.add(*total)


@case((np.zeros(3),), _normal((3,), scale=0.3), _poisson_hand)
def poisson_nll(w, X=X_DATA, y=Y_COUNTS):
    rate = np.exp(X @ w)
    return -np.sum(y * np.log(rate) - rate)


def _mixture_hand():
    x, mu = s("x"), v("mu", 3)
    comps = [-0.5 * (x - mu[k]) ** 2 + math.log(1 / 3) - 0.5 * math.log(2 * math.pi)
             for k in range(3)]
    top = sg.max(sg.max(comps[0], comps[1]), comps[2])
    return top + sg.log(sg.add(*[sg.exp(c - top) for c in comps]))


@case((0.0, np.zeros(3)), lambda rng: (float(rng.normal()), rng.normal(size=3) * 2), _mixture_hand)
def mixture_logpdf(x, mu):
    comps = -0.5 * (x - mu) ** 2 + np.log(1.0 / 3.0) - 0.5 * np.log(2.0 * np.pi)
    top = np.max(comps)
    return top + np.log(np.sum(np.exp(comps - top)))  # logsumexp


def _huber_hand():
    r = v("r", 5)
    return sg.add(*[sg.where(sg.abs(ri) <= 1.0, 0.5 * ri ** 2, sg.abs(ri) - 0.5) for ri in r])


@case((np.zeros(5),), _normal((5,), scale=1.5), _huber_hand)
def huber(r, delta=1.0):
    a = np.abs(r)
    return np.sum(np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta)))


def _cross_entropy_hand():
    p = v("p", 4)
    labels = [1.0, 0.0, 1.0, 0.0]
    clipped = [sg.min(sg.max(pi, 1e-6), 1 - 1e-6) for pi in p]
    return -sg.add(*[y * sg.log(c) + (1 - y) * sg.log(1 - c) for y, c in zip(labels, clipped)])


@case((np.zeros(4),), lambda rng: (rng.uniform(0.05, 0.95, size=4),), _cross_entropy_hand)
def clipped_cross_entropy(p):
    y = np.array([1.0, 0.0, 1.0, 0.0])
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return -np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)) * 4


# -- neural networks ---------------------------------------------------------------------------


def _mlp_hand():
    W1, b1, W2, b2 = m("W1", 3, 2), v("b1", 3), m("W2", 1, 3), v("b2", 1)
    total = []
    for row, target in zip(X_DATA[:, :2], Y_BINARY):
        h = [sg.tanh(sg.add(*[W1[i][k] * row[k] for k in range(2)]) + b1[i]) for i in range(3)]
        out = sg.add(*[W2[0][i] * h[i] for i in range(3)]) + b2[0]
        total.append((out - target) ** 2)
    return sg.add(*total) / len(total)


@case((np.zeros((3, 2)), np.zeros(3), np.zeros((1, 3)), np.zeros(1)),
      _normal((3, 2), (3,), (1, 3), (1,), scale=0.7), _mlp_hand)
def mlp_mse(W1, b1, W2, b2, X=X_DATA[:, :2], y=Y_BINARY):
    h = np.tanh(X @ W1.T + b1)
    out = (h @ W2.T + b2)[:, 0]
    return np.mean((out - y) ** 2)


def _relu_hand():
    W, x = m("W", 3, 3), v("x", 3)
    h = [sg.max(sg.add(*[W[i][k] * x[k] for k in range(3)]), 0.0) for i in range(3)]
    return sg.add(*[hi ** 2 for hi in h])


@case((np.zeros((3, 3)), np.zeros(3)), _normal((3, 3), (3,)), _relu_hand)
def relu_layer(W, x):
    h = np.maximum(W @ x, 0.0)
    return np.dot(h, h)


# -- finance -----------------------------------------------------------------------------------


def _black_scholes_hand():
    S, K, T, r, sigma = (s(n) for n in ("S", "K", "T", "r", "sigma"))

    def cdf(d):
        return 0.5 * (1 + sg.erf(d / math.sqrt(2)))

    d1 = (sg.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * sg.sqrt(T))
    d2 = d1 - sigma * sg.sqrt(T)
    return S * cdf(d1) - K * sg.exp(-r * T) * cdf(d2)


def _bs_points(rng):
    return (float(rng.uniform(80, 120)), float(rng.uniform(90, 110)), float(rng.uniform(0.5, 2)),
            float(rng.uniform(0.0, 0.05)), float(rng.uniform(0.1, 0.4)))


@case((), _bs_points, _black_scholes_hand)
def black_scholes(S, K, T, r, sigma):
    def norm_cdf(d):
        return 0.5 * (1.0 + sg.erf(d / np.sqrt(2.0)))

    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * norm_cdf(d1) - K * np.exp(-r * T) * norm_cdf(d2)


# -- vector outputs (Jacobians) ----------------------------------------------------------------


def _softmax_hand():
    z = v("z", 4)
    top = sg.max(sg.max(z[0], z[1]), sg.max(z[2], z[3]))
    e = [sg.exp(zi - top) for zi in z]
    total = sg.add(*e)
    return [ei / total for ei in e]


@case((np.zeros(4),), _normal((4,)), _softmax_hand)
def softmax(z):
    e = np.exp(z - np.max(z))
    return e / e.sum()


def _arm_hand():
    t = v("t", 2)
    return [1.0 * sg.cos(t[0]) + 0.7 * sg.cos(t[0] + t[1]),
            1.0 * sg.sin(t[0]) + 0.7 * sg.sin(t[0] + t[1])]


@case((np.zeros(2),), _normal((2,)), _arm_hand)
def two_link_arm(t, lengths=(1.0, 0.7)):
    angles = np.cumsum(t)
    return np.array([np.sum(lengths * np.cos(angles)), np.sum(lengths * np.sin(angles))])


def _special_hand():
    x = v("x", 3)
    return [sg.log1p(x[0] ** 2) + sg.expm1(x[1]) * sg.log2(2 + x[2] ** 2),
            sg.log10(1 + x[0] ** 2) * sg.cbrt(3 + x[1]) + sg.atan2(x[2], 1.5),
            sg.sinh(x[0]) / sg.cosh(x[1]) + 1 / (1 + x[2] ** 2)]


@case((np.zeros(3),), _normal((3,), scale=0.8), _special_hand)
def special_functions(x):
    return np.stack([np.log1p(np.square(x[0])) + np.expm1(x[1]) * np.log2(2 + x[2] ** 2),
                     np.log10(1 + x[0] ** 2) * np.cbrt(3 + x[1]) + np.arctan2(x[2], 1.5),
                     np.sinh(x[0]) / np.cosh(x[1]) + np.reciprocal(1 + x[2] ** 2)])
