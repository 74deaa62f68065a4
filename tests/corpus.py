"""Named test expressions, built with the Python API: the workloads symgraph must handle well.

Each entry is ``name -> builder()`` returning ``(expression, argument symbols)``. Builders are
deterministic (seeded), so op counts and generated code are reproducible.
"""

from __future__ import annotations

import random

from symgraph.ir.functions import FUNCTIONS as F
from symgraph.ir.node import Node, apply, symbols


def polynomial():
    x = symbols("x")
    return x**2 + 2 * x + 1, [x]


def linear_mse(points: int = 10):
    W, b = symbols("W b")
    rng = random.Random(1)
    residuals = [(W * rng.uniform(-1, 1) + b - rng.uniform(-1, 1)) ** 2 for _ in range(points)]
    return apply("add", *residuals) / points, [W, b]


def rosenbrock(n: int = 10):
    xs = list(symbols(" ".join(f"x{i}" for i in range(n))))
    terms = [100 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2 for i in range(n - 1)]
    return apply("add", *terms), xs


def mlp(inputs: int = 3, hidden: int = 4, points: int = 5):
    rng = random.Random(2)
    w1 = [[symbols(f"w1_{i}_{j}") for j in range(inputs)] for i in range(hidden)]
    b1 = [symbols(f"b1_{i}") for i in range(hidden)]
    w2 = [symbols(f"w2_{i}") for i in range(hidden)]
    b2 = symbols("b2")
    loss = []
    for _ in range(points):
        data = [rng.uniform(-1, 1) for _ in range(inputs)]
        hidden_units = [F["tanh"](apply("add", *[w * d for w, d in zip(row, data)], bias))
                        for row, bias in zip(w1, b1)]
        prediction = apply("add", *[w * h for w, h in zip(w2, hidden_units)], b2)
        loss.append((prediction - rng.uniform(-1, 1)) ** 2)
    params = [w for row in w1 for w in row] + b1 + w2 + [b2]
    return apply("add", *loss) / points, params


def black_scholes():
    S, K, T, r, sigma = symbols("S K T r sigma")
    d1 = (F["log"](S / K) + (r + sigma**2 / 2) * T) / (sigma * F["sqrt"](T))
    d2 = d1 - sigma * F["sqrt"](T)
    cdf = lambda z: 0.5 * (1 + F["erf"](z / 2**0.5))  # noqa: E731
    return S * cdf(d1) - K * F["exp"](-r * T) * cdf(d2), [S, K, T, r, sigma]


def nested(depth: int = 200):
    x, y = symbols("x y")
    rng = random.Random(3)
    u = x
    for _ in range(depth):
        u = F[rng.choice(["sin", "cos", "exp", "log"])](u) * y + x
    return u, [x, y]


def random_dag(size: int = 2000, seed: int = 4):
    """Heavily shared: every new node reuses earlier ones."""
    rng = random.Random(seed)
    leaves = list(symbols("a b c d e"))
    pool: list[Node] = list(leaves)
    unary = ["sin", "cos", "tanh", "exp", "sigmoid"]
    while len(pool) < size:
        a, b = rng.choice(pool[-50:]), rng.choice(pool)
        kind = rng.random()
        if kind < 0.35:
            pool.append(a + b)
        elif kind < 0.7:
            pool.append(a * b)
        else:
            pool.append(F[rng.choice(unary)](a * 0.5))
    return apply("add", *pool[-20:]), leaves


def log_sum_exp(n: int = 20):
    xs = list(symbols(" ".join(f"x{i}" for i in range(n))))
    return F["log"](apply("add", *[F["exp"](v) for v in xs])), xs


def product_chain(depth: int = 100):
    x = symbols("x")
    u = x
    for _ in range(depth):
        u = 0.5 * u * F["sin"](u) + 0.5 * u  # |u| never grows: stays well conditioned
    return u, [x]


CORPUS = {f.__name__: f for f in (polynomial, linear_mse, rosenbrock, mlp, black_scholes,
                                   nested, random_dag, log_sum_exp, product_chain)}
