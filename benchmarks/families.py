"""A generator of workloads: formula families, each built at several sizes with seeded coefficients.

The suite's nine named workloads (benchmarks/workloads.py) are what symgraph's thresholds were
first fitted to; a lead that holds only there is not a lead. These families are the same kinds of
formulas at other shapes and sizes, so the benchmark reports a distribution (min, median, worst
five) instead of a handful of figures.

Each family builds ``(expression, argument symbols)`` from a size parameter ``n`` and a seeded
``random.Random``; ``sizes()`` picks the ``n`` whose operation count is nearest each target (10 to
5,000 operations). Every family has a box of arguments where value and gradient are finite.

The 1-point column of the distribution (benchmarks/distribution.py, from benchmarks/tools.py)
times symgraph's fastest documented form, ``fn.value_and_grad_floats(*floats)`` (floats in, the
value and a tuple of floats out, as SymPy + njit's list of floats); until 2026-12-01 18:10 UTC it
timed ``fn.value_and_grad(x)`` with one array (benchmarks/onepoint.py times every form).

Fitting and validating: ``FIT`` families may be used to choose strategies and thresholds (lanes
vs rows vs tape, chunk sizes); ``VALIDATE`` families must never be, so a decision's effect on them
is the held-out figure. Today's thresholds were fitted to the named suite only, so every family
here is held out for them; the split is for the next tuning.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchmarks import families_ops as ops_families
from symgraph.ir.evaluate import count_ops
from symgraph.ir.functions import FUNCTIONS as F
from symgraph.ir.node import Node, apply, symbol, symbols

Built = tuple[Node, list[Node]]
Box = Callable[[int], tuple[np.ndarray, np.ndarray]]
TARGETS = (10, 100, 1_000, 5_000)  # operation counts each family is built at


def _syms(prefix: str, n: int) -> list[Node]:
    return [symbol(f"{prefix}{i}") for i in range(n)]


def _sum(terms: list[Node]) -> Node:
    return terms[0] if len(terms) == 1 else apply("add", *terms)


def _c(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 3)  # short literals keep generated code readable


def uniform(low: float, high: float) -> Box:
    return lambda n: (np.full(n, low), np.full(n, high))


# -- statistics: log-likelihoods over unrolled data ----------------------------------------------


def gauss_loglik(n: int, rng: random.Random) -> Built:
    mu, ls = symbols("mu log_sigma")
    inv = F["exp"](-ls)
    return _sum([0.5 * ((_c(rng, -2, 2) - mu) * inv) ** 2 + ls for _ in range(n)]), [mu, ls]


def poisson_glm(n: int, rng: random.Random) -> Built:
    b = _syms("b", 4)
    terms = []
    for _ in range(n):
        eta = b[0] + _sum([bi * _c(rng, -1, 1) for bi in b[1:]])
        terms.append(F["exp"](eta) - rng.randint(0, 5) * eta)
    return _sum(terms), b


def logistic_regression(n: int, rng: random.Random) -> Built:
    w = _syms("w", 5)
    terms = [F["softplus"](-rng.choice((-1, 1)) * _sum([wi * _c(rng, -2, 2) for wi in w]))
             for _ in range(n)]
    return _sum(terms) / n, w


def student_t(n: int, rng: random.Random) -> Built:
    mu, ls = symbols("mu log_s")
    s = F["exp"](ls)
    return _sum([F["log"](1 + ((_c(rng, -3, 3) - mu) / s) ** 2 / 3) * 2 + ls
                 for _ in range(n)]), [mu, ls]


def weibull(n: int, rng: random.Random) -> Built:
    a, b = symbols("log_k log_lambda")
    k, lam = F["exp"](a), F["exp"](b)
    terms = []
    for _ in range(n):
        d = _c(rng, 0.2, 3)
        terms.append(-(a - b + (k - 1) * F["log"](d / lam) - (d / lam) ** k))
    return _sum(terms), [a, b]


def negbin_loglik(n: int, rng: random.Random) -> Built:
    # Negative binomial counts, one (log r, log mu) pair a group of 3: lgamma of a parameter,
    # digamma in the gradient (added 2026-12-03, after the families above were tuned on).
    groups = max(1, n // 3)
    lr, lm = _syms("log_r", groups), _syms("log_mu", groups)
    terms = []
    for j in range(groups):
        r, mu = F["exp"](lr[j]), F["exp"](lm[j])
        for _ in range(3):
            y = rng.randint(0, 9)
            terms.append(F["lgamma"](y + r) - F["lgamma"](r) + r * (lr[j] - F["log"](r + mu))
                         + y * (lm[j] - F["log"](r + mu)))
    return -_sum(terms), [*lr, *lm]


def gamma_groups(n: int, rng: random.Random) -> Built:
    # Gamma likelihoods of groups of 3 observations, each group its own (log shape, log rate):
    # lgamma of a parameter, digamma in the gradient (added 2026-12-03 with the vector lgamma,
    # never tuned on, as the three below).
    groups = max(1, n // 3)
    la, lb = _syms("log_a", groups), _syms("log_b", groups)
    terms = []
    for j in range(groups):
        a, b = F["exp"](la[j]), F["exp"](lb[j])
        for _ in range(3):
            y = _c(rng, 0.2, 6)
            terms.append(F["lgamma"](a) - a * lb[j] - (a - 1) * math.log(y) + b * y)
    return _sum(terms), [*la, *lb]


def student_t_dof(n: int, rng: random.Random) -> Built:
    # Student-t with its degrees of freedom a parameter (nu = exp(log_nu)).
    mu, ls, lnu = symbols("mu log_s log_nu")
    s, nu = F["exp"](ls), F["exp"](lnu)
    return _sum([F["lgamma"](nu / 2) - F["lgamma"]((nu + 1) / 2) + 0.5 * F["log"](nu) + ls
                 + (nu + 1) / 2 * F["log"](1 + ((_c(rng, -3, 3) - mu) / s) ** 2 / nu)
                 for _ in range(n)]), [mu, ls, lnu]


def dirichlet_multinomial(n: int, rng: random.Random) -> Built:
    # Counts of 4 categories, concentrations exp(log_alpha_i): lgamma of parameter sums.
    la = _syms("log_alpha", 4)
    alpha = [F["exp"](v) for v in la]
    total = _sum(alpha)
    terms = []
    for _ in range(max(1, n // 4)):
        counts = [rng.randint(0, 6) for _ in range(4)]
        terms.append(F["lgamma"](total + sum(counts)) - F["lgamma"](total) + _sum(
            [F["lgamma"](a) - F["lgamma"](a + c) for a, c in zip(alpha, counts)]))
    return _sum(terms), la


def beta_binomial(n: int, rng: random.Random) -> Built:
    # k successes of m trials, a beta(a, b) prior on the rate (a, b = exp(log_a), exp(log_b)).
    la, lb = symbols("log_a log_b")
    a, b = F["exp"](la), F["exp"](lb)
    terms = []
    for _ in range(n):
        m = rng.randint(5, 20)
        k = rng.randint(0, m)
        terms.append(F["lgamma"](m + a + b) + F["lgamma"](a) + F["lgamma"](b)
                     - F["lgamma"](a + b) - F["lgamma"](k + a) - F["lgamma"](m - k + b))
    return _sum(terms), [la, lb]


def gauss_mixture(n: int, rng: random.Random) -> Built:
    m1, m2, a = symbols("m1 m2 a")
    w = F["sigmoid"](a)
    return _sum([-F["log"](w * F["exp"](-0.5 * (d - m1) ** 2) + (1 - w) * F["exp"](
        -0.5 * (d - m2) ** 2)) for d in (_c(rng, -3, 3) for _ in range(n))]), [m1, m2, a]


# -- thermodynamics and chemistry -----------------------------------------------------------------


def gibbs_mixing(n: int, rng: random.Random) -> Built:
    x = _syms("n", n)
    total = _sum(x)
    return _sum([xi * (_c(rng, -1, 1) + F["log"](xi / total)) for xi in x]), x


def cubic_eos(n: int, rng: random.Random) -> Built:
    """Helmholtz energy of a van der Waals mixture: quadratic mixing rule for a, linear for b."""
    x = _syms("x", n)
    V, T = symbols("V T")
    a_i = [_c(rng, 0.5, 2) for _ in range(n)]
    a = _sum([x[i] * x[j] * math.sqrt(a_i[i] * a_i[j]) for i in range(n) for j in range(n)])
    b = _sum([xi * _c(rng, 0.05, 0.2) for xi in x])
    ideal = _sum([xi * F["log"](xi) for xi in x])
    return -_sum(x) * T * F["log"](V - b) - a / V + T * ideal, [*x, V, T]


def _cubic_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    # V above the covolume b = sum(x_i b_i) <= 0.2 * (n - 2) everywhere in the box, so that
    # log(V - b) is real at every size (V in [5, 10] up to 20 species, as before)
    volume = max(5.0, 0.25 * (n - 2))
    return (np.r_[np.full(n - 2, 0.1), volume, 1.0],
            np.r_[np.full(n - 2, 1.0), volume + 5.0, 2.0])


def arrhenius(n: int, rng: random.Random) -> Built:
    """Squared production rates of a reaction network: A exp(-E/T) c_i^p c_j^q."""
    species = max(2, n // 3)
    c = _syms("c", species)
    T = symbol("T")
    rates = []
    for _ in range(n):
        i, j = rng.randrange(species), rng.randrange(species)
        rates.append(_c(rng, 0.5, 2) * F["exp"](-_c(rng, 1, 5) / T) * c[i] ** rng.randint(1, 2)
                     * c[j])
    return _sum([r * r for r in rates]), [*c, T]


def einstein_solid(n: int, rng: random.Random) -> Built:
    """Free energy of Einstein oscillators with temperatures theta_i: log(2 sinh(theta/2T))."""
    th = _syms("theta", n)
    T = symbol("T")
    return _sum([_c(rng, 0.5, 1.5) * F["log"](-F["expm1"](-t / T)) + 0.5 * t / T
                 for t in th]), [*th, T]


# -- molecular potentials -------------------------------------------------------------------------


def _lattice(count: int, dims: int, spacing: float) -> np.ndarray:
    side = max(2, math.ceil(count ** (1 / dims)))
    idx = np.arange(count)
    return np.stack([(idx // side**k) % side for k in range(dims)], axis=1) * spacing


def _lattice_box(dims: int, spacing: float, jitter: float) -> Box:
    def box(n: int) -> tuple[np.ndarray, np.ndarray]:
        centre = _lattice(n // dims, dims, spacing).ravel()
        return centre - jitter, centre + jitter
    return box


def _pairs(rng: random.Random, atoms: int, limit: int) -> list[tuple[int, int]]:
    pairs = [(i, j) for i in range(atoms) for j in range(i + 1, atoms)]
    return pairs if len(pairs) <= limit else sorted(rng.sample(pairs, limit))


def lennard_jones(n: int, rng: random.Random) -> Built:
    atoms = max(2, n)
    p = _syms("r", 3 * atoms)
    terms = []
    for i, j in _pairs(rng, atoms, 4 * atoms):
        r2 = _sum([(p[3 * i + k] - p[3 * j + k]) ** 2 for k in range(3)])
        s6 = (1.0 / r2) ** 3
        terms.append(4 * (s6 * s6 - s6))
    return _sum(terms), p


def morse_chain(n: int, rng: random.Random) -> Built:
    x = _syms("x", max(2, n))
    return _sum([_c(rng, 1, 2) * (1 - F["exp"](-1.5 * (b - a - 1.0))) ** 2
                 for a, b in zip(x, x[1:])]), x


def _chain_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n) * 1.0 - 0.1, np.arange(n) * 1.0 + 0.1


def coulomb(n: int, rng: random.Random) -> Built:
    atoms = max(2, n)
    p = _syms("q", 2 * atoms)
    charge = [rng.choice((-1, 1)) * _c(rng, 0.5, 1) for _ in range(atoms)]
    return _sum([charge[i] * charge[j] / F["sqrt"]((p[2 * i] - p[2 * j]) ** 2 + (
        p[2 * i + 1] - p[2 * j + 1]) ** 2 + 0.01) for i, j in _pairs(rng, atoms, 6 * atoms)]), p


def bond_angles(n: int, rng: random.Random) -> Built:
    """A 2-D chain: harmonic bonds (hypot) and bond angles (atan2) around set values."""
    atoms = max(3, n)
    p = _syms("p", 2 * atoms)
    terms = []
    for i in range(atoms - 1):
        dx, dy = p[2 * i + 2] - p[2 * i], p[2 * i + 3] - p[2 * i + 1]
        terms.append((F["hypot"](dx, dy) - 1.0) ** 2)
        terms.append(_c(rng, 0.1, 0.5) * (F["atan2"](dy, dx) - _c(rng, -0.3, 0.3)) ** 2)
    return _sum(terms), p


def _bond_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    centre = np.stack([np.arange(n // 2) * 1.0, np.zeros(n // 2)], axis=1).ravel()
    return centre - 0.2, centre + 0.2


# -- mechanics -----------------------------------------------------------------------------------


def fpu_chain(n: int, rng: random.Random) -> Built:
    """Lagrangian of a Fermi-Pasta-Ulam chain: kinetic minus quadratic and quartic springs."""
    q, v = _syms("q", max(2, n)), _syms("v", max(2, n))
    kinetic = _sum([0.5 * _c(rng, 0.5, 2) * vi**2 for vi in v])
    springs = [(b - a) for a, b in zip(q, q[1:])]
    return kinetic - _sum([0.5 * d**2 + 0.25 * d**4 for d in springs]), [*q, *v]


def pendulum_chain(n: int, rng: random.Random) -> Built:
    """Energy of an n-link planar pendulum: mass matrix cos(q_i - q_j), gravity cos(q_i)."""
    links = max(2, n)
    q, v = _syms("q", links), _syms("v", links)
    kinetic = [_c(rng, 0.2, 1) * F["cos"](q[i] - q[j]) * v[i] * v[j]
               for i in range(links) for j in range(i, links)]
    return _sum(kinetic) - _sum([_c(rng, 1, 3) * F["cos"](qi) for qi in q]), [*q, *v]


def catenary_chain(n: int, rng: random.Random) -> Built:
    # A hanging chain of n links: stretch energy by cosh of each link's slope, gravity on
    # each node (added 2026-12-03).
    u = _syms("u", max(2, n + 1))
    terms = [_c(rng, 0.5, 2) * F["cosh"](u[i + 1] - u[i]) + _c(rng, 0.1, 0.3) * u[i]
             for i in range(len(u) - 1)]
    return _sum(terms), u


def nbody(n: int, rng: random.Random) -> Built:
    bodies = max(2, n)
    p, v = _syms("x", 2 * bodies), _syms("v", 2 * bodies)
    mass = [_c(rng, 0.5, 2) for _ in range(bodies)]
    kinetic = _sum([0.5 * mass[i // 2] * vi**2 for i, vi in enumerate(v)])
    potential = _sum([-mass[i] * mass[j] / F["hypot"](p[2 * i] - p[2 * j], p[2 * i + 1] - p[
        2 * j + 1]) for i, j in _pairs(rng, bodies, 6 * bodies)])
    return kinetic + potential, [*p, *v]


def _nbody_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    low, high = _lattice_box(2, 1.5, 0.2)(n // 2)
    return np.r_[low, np.full(n // 2, -1.0)], np.r_[high, np.full(n // 2, 1.0)]


# -- quadratic and rational forms -----------------------------------------------------------------


def quadratic_form(n: int, rng: random.Random) -> Built:
    x = _syms("x", max(2, n))
    m = len(x)
    return _sum([_c(rng, -1, 1) * x[i] * x[j] for i in range(m) for j in range(i, m)]
                + [_c(rng, -1, 1) * xi for xi in x]), x


def rational(n: int, rng: random.Random) -> Built:
    x = _syms("x", max(2, n))
    m = len(x)
    terms = []
    for i in range(m):
        j = (i + 1) % m
        terms.append((_c(rng, -1, 1) + _c(rng, -1, 1) * x[i] * x[j]) / (1 + (x[i] - x[j]) ** 2))
    return _sum(terms), x


# -- finance -------------------------------------------------------------------------------------


def option_portfolio(n: int, rng: random.Random) -> Built:
    S, sigma, r, T = symbols("S sigma r T")
    root = F["sqrt"](T)
    cdf = lambda z: 0.5 * (1 + F["erf"](z / math.sqrt(2)))  # noqa: E731
    calls = []
    for _ in range(n):
        K = _c(rng, 60, 140)
        d1 = (F["log"](S / K) + (r + sigma**2 / 2) * T) / (sigma * root)
        calls.append(_c(rng, -1, 1) * (S * cdf(d1) - K * F["exp"](-r * T) * cdf(d1 - sigma * root)))
    return _sum(calls), [S, sigma, r, T]


def _option_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([80.0, 0.1, 0.0, 0.2]), np.array([120.0, 0.5, 0.1, 2.0])


def mean_variance(n: int, rng: random.Random) -> Built:
    w = _syms("w", max(2, n))
    m = len(w)
    risk = _sum([_c(rng, -0.1, 0.1) * w[i] * w[j] for i in range(m) for j in range(i + 1, m)]
                + [_c(rng, 0.5, 1) * wi**2 for wi in w])
    return risk - _sum([_c(rng, 0, 0.2) * wi + 0.01 * F["log"](wi) for wi in w]), w


def yield_curve(n: int, rng: random.Random) -> Built:
    """Least squares of bond prices under a Nelson-Siegel curve (beta0..2, tau)."""
    b0, b1, b2, tau = symbols("beta0 beta1 beta2 tau")
    terms = []
    for _ in range(n):
        t = _c(rng, 0.5, 30)
        u = t / tau
        decay = (1 - F["exp"](-u)) / u
        y = b0 + b1 * decay + b2 * (decay - F["exp"](-u))
        terms.append((F["exp"](-y * t) - _c(rng, 0.3, 1)) ** 2)
    return _sum(terms), [b0, b1, b2, tau]


def _yield_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([0.01, -0.02, -0.02, 1.0]), np.array([0.05, 0.02, 0.02, 3.0])


# -- machine learning losses with data unrolled ----------------------------------------------------


def mlp_loss(n: int, rng: random.Random) -> Built:
    inputs, hidden = 2, 5
    w1, b1 = _syms("w1_", inputs * hidden), _syms("b1_", hidden)
    w2, b2 = _syms("w2_", hidden), symbol("b2")
    loss = []
    for _ in range(n):
        row = [_c(rng, -1, 1) for _ in range(inputs)]
        h = [F["tanh"](_sum([w1[k * inputs + i] * row[i] for i in range(inputs)]) + b1[k])
             for k in range(hidden)]
        loss.append((_sum([a * u for a, u in zip(w2, h)]) + b2 - _c(rng, -1, 1)) ** 2)
    return _sum(loss) / n, [*w1, *b1, *w2, b2]


def logcosh_regression(n: int, rng: random.Random) -> Built:
    # The log-cosh loss of a linear model over unrolled data (added 2026-12-03).
    w = _syms("w", 4)
    terms = [F["log"](F["cosh"](_sum([wi * _c(rng, -1, 1) for wi in w[1:]]) + w[0]
                                - _c(rng, -2, 2))) for _ in range(n)]
    return _sum(terms), w


def softmax_xent(n: int, rng: random.Random) -> Built:
    classes, features = 3, 3
    W = _syms("W", classes * features)
    loss = []
    for _ in range(n):
        x = [_c(rng, -1, 1) for _ in range(features)]
        z = [_sum([W[c * features + f] * x[f] for f in range(features)]) for c in range(classes)]
        loss.append(F["log"](_sum([F["exp"](zc) for zc in z])) - z[rng.randrange(classes)])
    return _sum(loss) / n, W


# -- PDE stencil energies -------------------------------------------------------------------------


def ginzburg_landau(n: int, rng: random.Random) -> Built:
    u = _syms("u", max(3, n))
    h = 1.0 / len(u)
    grad = [0.5 * ((b - a) / h) ** 2 * h for a, b in zip(u, u[1:])]
    return _sum(grad + [0.25 * h * (ui**2 - 1) ** 2 for ui in u]), u


def bratu(n: int, rng: random.Random) -> Built:
    side = max(2, round(math.sqrt(n)))
    u = _syms("u", side * side)
    lam = _c(rng, 0.5, 2)
    terms = []
    for i in range(side):
        for j in range(side):
            here = u[i * side + j]
            if i + 1 < side:
                terms.append(0.5 * (u[(i + 1) * side + j] - here) ** 2)
            if j + 1 < side:
                terms.append(0.5 * (u[i * side + j + 1] - here) ** 2)
            terms.append(-lam * F["exp"](here))
    return _sum(terms), u


def minimal_surface(n: int, rng: random.Random) -> Built:
    side = max(2, round(math.sqrt(n)))
    u = _syms("u", side * side)
    terms = []
    for i in range(side - 1):
        for j in range(side - 1):
            here = u[i * side + j]
            terms.append(F["sqrt"](1 + (u[(i + 1) * side + j] - here) ** 2
                                   + (u[i * side + j + 1] - here) ** 2))
    return _sum(terms), u


# -- products, nested compositions, trigonometric series -------------------------------------------


def product_chain(n: int, rng: random.Random) -> Built:
    x = _syms("x", max(2, n))
    return apply("mul", *[1 + _c(rng, 0.05, 0.2) * F["sin"](xi) for xi in x]), x


def composition(n: int, rng: random.Random) -> Built:
    x, y = symbols("x y")
    u = x
    for _ in range(max(1, n)):
        kind = rng.choice(["tanh", "sigmoid", "atan", "norm", "log1p"])
        if kind == "norm":
            inner = F["sqrt"](1 + u * u) - 1
        elif kind == "log1p":
            inner = F["log1p"](u * u)
        else:
            inner = F[kind](u)
        u = y * inner + x
    return u, [x, y]


def _composition_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([0.5, 0.1]), np.array([1.5, 0.9])


def trig_series(n: int, rng: random.Random) -> Built:
    x, y = symbols("x y")
    return _sum([_c(rng, -1, 1) * F["sin"](k * x + _c(rng, 0, 3)) * F["cos"](k * y)
                 for k in range(1, max(1, n) + 1)]), [x, y]


# -- piecewise models -----------------------------------------------------------------------------


def huber_regression(n: int, rng: random.Random) -> Built:
    a, b = symbols("a b")
    terms = []
    for _ in range(n):
        r = a * _c(rng, -2, 2) + b - _c(rng, -3, 3)
        terms.append(F["where"](F["abs"](r) <= 1.0, 0.5 * r * r, F["abs"](r) - 0.5))
    return _sum(terms), [a, b]


def relu_network(n: int, rng: random.Random) -> Built:
    hidden = 6
    w, v = _syms("w", hidden), _syms("v", hidden)
    loss = []
    for _ in range(n):
        x = _c(rng, -2, 2)
        out = _sum([vk * F["relu"](wk * x + _c(rng, -1, 1)) for wk, vk in zip(w, v)])
        loss.append((out - _c(rng, -1, 1)) ** 2)
    return _sum(loss), [*w, *v]


def tiered_cost(n: int, rng: random.Random) -> Built:
    x = _syms("x", max(1, n))
    return _sum([F["where"](xi > t, _c(rng, 1, 2) * (xi - t) ** 2, F["softplus"](xi - t))
                 + F["min"](xi, 0.5) * F["max"](xi, -0.5)
                 for xi, t in ((xi, _c(rng, -0.5, 0.5)) for xi in x)]), x


def _zigzag_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A 2-D chain bent at every atom (angles far from 0 and pi, where acos' derivative is
    finite and well-conditioned)."""
    atoms = n // 2
    centre = np.stack([np.arange(atoms) * 1.0, (np.arange(atoms) % 2) * 0.8], axis=1).ravel()
    return centre - 0.1, centre + 0.1


@dataclass(frozen=True)
class Family:
    name: str
    kind: str
    build: Callable[[int, random.Random], Built]
    box: Box
    fit: bool  # may be used to fit strategies and thresholds (else: held out for validation)

    def make(self, n: int) -> Built:
        return self.build(n, random.Random(zlib.crc32(f"{self.name}:{n}".encode())))


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("gauss_loglik", "statistics", gauss_loglik, uniform(-1, 1), True),
    Family("poisson_glm", "statistics", poisson_glm, uniform(-0.3, 0.3), False),
    Family("logistic_regression", "statistics", logistic_regression, uniform(-1, 1), True),
    Family("student_t", "statistics", student_t, uniform(-1, 1), False),
    Family("weibull", "statistics", weibull, uniform(-0.5, 0.5), True),
    Family("gauss_mixture", "statistics", gauss_mixture, uniform(-1, 1), False),
    Family("negbin_loglik", "statistics", negbin_loglik, uniform(-0.7, 1.5), False),
    Family("gamma_groups", "statistics", gamma_groups, uniform(-1, 2), False),
    Family("student_t_dof", "statistics", student_t_dof, uniform(-0.5, 1.5), False),
    Family("dirichlet_multinomial", "statistics", dirichlet_multinomial, uniform(-1, 1.5),
           False),
    Family("beta_binomial", "statistics", beta_binomial, uniform(-1, 2), False),
    Family("gibbs_mixing", "thermochemistry", gibbs_mixing, uniform(0.1, 2), True),
    Family("cubic_eos", "thermochemistry", cubic_eos, _cubic_box, False),
    Family("arrhenius", "thermochemistry", arrhenius, uniform(0.5, 2), True),
    Family("einstein_solid", "thermochemistry", einstein_solid, uniform(0.5, 2), False),
    Family("lennard_jones", "molecular", lennard_jones, _lattice_box(3, 1.1, 0.05), True),
    Family("morse_chain", "molecular", morse_chain, _chain_box, False),
    Family("coulomb", "molecular", coulomb, _lattice_box(2, 1.0, 0.2), True),
    Family("bond_angles", "molecular", bond_angles, _bond_box, False),
    Family("fpu_chain", "mechanics", fpu_chain, uniform(-1, 1), True),
    Family("pendulum_chain", "mechanics", pendulum_chain, uniform(-2, 2), False),
    Family("nbody", "mechanics", nbody, _nbody_box, False),
    Family("catenary_chain", "mechanics", catenary_chain, uniform(-1, 1), False),
    Family("quadratic_form", "quadratic", quadratic_form, uniform(-1, 1), True),
    Family("rational", "rational", rational, uniform(-1, 1), False),
    Family("option_portfolio", "finance", option_portfolio, _option_box, True),
    Family("mean_variance", "finance", mean_variance, uniform(0.1, 1), False),
    Family("yield_curve", "finance", yield_curve, _yield_box, False),
    Family("mlp_loss", "ml", mlp_loss, uniform(-1, 1), True),
    Family("softmax_xent", "ml", softmax_xent, uniform(-1, 1), False),
    Family("logcosh_regression", "ml", logcosh_regression, uniform(-1, 1), False),
    Family("ginzburg_landau", "pde", ginzburg_landau, uniform(-1, 1), True),
    Family("bratu", "pde", bratu, uniform(-0.5, 0.5), False),
    Family("minimal_surface", "pde", minimal_surface, uniform(-1, 1), False),
    Family("product_chain", "nested", product_chain, uniform(-2, 2), True),
    Family("composition", "nested", composition, _composition_box, False),
    Family("trig_series", "nested", trig_series, uniform(-3, 3), False),
    Family("huber_regression", "piecewise", huber_regression, uniform(-2, 2), True),
    Family("relu_network", "piecewise", relu_network, uniform(-1, 1), False),
    Family("tiered_cost", "piecewise", tiered_cost, uniform(-1, 1), False),
    # Ops the families above never call (benchmarks/families_ops.py, 2026-12-06): the first
    # five chose which ops got vector forms; the last three were probed once, never tuned on.
    Family("fisher_z", "statistics", ops_families.fisher_z, uniform(-0.8, 0.8), True),
    Family("decibel_fit", "ml", ops_families.decibel_fit, uniform(-3, 3), True),
    Family("entropy_bits", "ml", ops_families.entropy_bits, uniform(-2, 2), True),
    Family("kl_divergence", "ml", ops_families.kl_divergence, uniform(-1, 1), True),
    Family("tangent_terms", "mechanics", ops_families.tangent_terms, uniform(-2, 2), True),
    Family("cbrt_density", "molecular", ops_families.cbrt_density, uniform(-1, 1), False),
    Family("censored_normal", "statistics", ops_families.censored_normal, uniform(-1, 1),
           False),
    Family("angle_potential", "molecular", ops_families.angle_potential, _zigzag_box, False),
]}
FIT = [name for name, f in FAMILIES.items() if f.fit]
VALIDATE = [name for name, f in FAMILIES.items() if not f.fit]


def size_for(family: Family, target: int, limit: int = 1 << 16) -> tuple[int, int] | None:
    """The size parameter whose operation count is nearest `target` (doubling, then bisection
    on the log of the count); None when no size comes within a factor of 2."""
    def ops(n: int) -> int:
        return count_ops(family.make(n)[0])

    low, n = 1, 1
    while ops(n) < target and n < limit:
        low, n = n, n * 2
    high = n
    while high - low > 1:  # ops grows with n: bisect between the last two doublings
        mid = (low + high) // 2
        low, high = (mid, high) if ops(mid) < target else (low, mid)
    best = min({low, high}, key=lambda m: abs(math.log(ops(m) / target)))
    count = ops(best)
    return (best, count) if target / 2 <= count <= target * 2 else None


def parse_name(name: str) -> tuple[Family, int]:
    """``family@n`` -> (the family, its size parameter)."""
    family, _, n = name.partition("@")
    if family not in FAMILIES or not n.isdigit():
        raise KeyError(f"unknown workload {name!r}: a suite name or family@n with a family "
                       f"of {sorted(FAMILIES)}")
    return FAMILIES[family], int(n)


def sizes(targets: tuple[int, ...] = TARGETS, names: list[str] | None = None
          ) -> dict[str, tuple[int, int]]:
    """The families `names` (default: all) at every target they reach: ``family@n`` ->
    (target, operation count)."""
    out = {}
    for family in (FAMILIES[n] for n in (names or FAMILIES)):
        for target in targets:
            found = size_for(family, target)
            if found is not None:
                out[f"{family.name}@{found[0]}"] = (target, found[1])
    return out
