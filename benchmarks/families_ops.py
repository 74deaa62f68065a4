"""Families over the ops the first 40 families never call (added 2026-12-06).

A probe of formula kinds outside benchmarks/families.py (one core, 20,000 points, interleaved
with JAX, SymEngine and SymPy's NumPy) found the losers these stand for: each op without a
vector form ran libm point by point in lane kernels. fisher_z (atanh) was 0.85x JAX, a KL
divergence (xlogy) 0.76x JAX and SymEngine, tangent terms 1.08x SymEngine, and log2/log10
terms were even with JAX. vecmath then got vatanh, vxlogy, vtan, vlog2 and vlog10, chosen on
these: they are FIT families (benchmarks.families' sense), not held out. cbrt_density (cbrt),
censored_normal (erfc) and angle_potential (acos) still call libm in their lanes.

Each builder is ``(n, rng) -> (expression, arguments)`` as in benchmarks.families, which lists
them with their boxes.
"""

from __future__ import annotations

import random

from symgraph.ir.functions import FUNCTIONS as F
from symgraph.ir.node import Node, apply, symbol

Built = tuple[Node, list[Node]]


def _syms(prefix: str, n: int) -> list[Node]:
    return [symbol(f"{prefix}{i}") for i in range(n)]


def _sum(terms: list[Node]) -> Node:
    return terms[0] if len(terms) == 1 else apply("add", *terms)


def _c(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 3)


def fisher_z(n: int, rng: random.Random) -> Built:
    """Correlations r_i pooled on Fisher's z scale, weighted by sample sizes (atanh)."""
    r = _syms("r", max(1, n))
    return _sum([(rng.randint(5, 50) - 3) * (F["atanh"](ri) - _c(rng, -0.5, 0.5)) ** 2
                 for ri in r]), r


def decibel_fit(n: int, rng: random.Random) -> Built:
    """Gains g_i fitted in decibels: (10 log10(g^2 + noise) - measured)^2 (log10)."""
    g = _syms("g", max(1, n))
    return _sum([(10.0 * F["log10"](gi * gi + _c(rng, 0.01, 1)) - _c(rng, -10, 10)) ** 2
                 for gi in g]), g


def entropy_bits(n: int, rng: random.Random) -> Built:
    """A softmax's entropy in bits, plus a linear tilt (log2)."""
    w = _syms("w", max(2, n))
    z = _sum([F["exp"](wi) for wi in w])
    probs = [F["exp"](wi) / z for wi in w]
    return (-_sum([p * F["log2"](p) for p in probs])
            + _sum([_c(rng, -1, 1) * wi for wi in w])), w


def kl_divergence(n: int, rng: random.Random) -> Built:
    """sum p log(p / q) as SciPy writes it, xlogy(p, p) - xlogy(p, q), with p and q made
    positive from the parameters (xlogy)."""
    a = _syms("a", max(1, n))
    terms = []
    for ai in a:
        p = ai * ai + _c(rng, 0.05, 0.5)
        q = _c(rng, 0.2, 2) * F["exp"](-ai)
        terms.append(F["xlogy"](p, p) - F["xlogy"](p, q))
    return _sum(terms), a


def tangent_terms(n: int, rng: random.Random) -> Built:
    """A chain's half-angle springs, k tan(theta/2)^2 (tan)."""
    t = _syms("t", max(1, n))
    return _sum([_c(rng, 0.5, 2) * F["tan"](0.5 * (ti - _c(rng, -0.3, 0.3))) ** 2
                 for ti in t]), t


def cbrt_density(n: int, rng: random.Random) -> Built:
    """A density functional's local term, c n^(4/3) = c n cbrt(n), over grid values
    n_i = rho_i^2 + floor, and a linear potential (cbrt)."""
    rho = _syms("rho", max(1, n))
    terms = []
    for ri in rho:
        d = ri * ri + _c(rng, 0.01, 0.1)
        terms.append(_c(rng, -1, -0.5) * d * F["cbrt"](d) + _c(rng, -1, 1) * ri)
    return _sum(terms), rho


def censored_normal(n: int, rng: random.Random) -> Built:
    """A Tobit log-likelihood: observed points' squared residuals, censored ones' log of the
    normal tail, log(erfc(z / sqrt(2)) / 2) (erfc)."""
    b = _syms("b", 3)
    terms = []
    for _ in range(max(1, n)):
        z = b[0] + b[1] * _c(rng, -1, 1) + b[2] * _c(rng, -1, 1) - _c(rng, -1, 1)
        censored = rng.random() < 0.5
        terms.append(-F["log"](0.5 * F["erfc"](0.7071067811865476 * z)) if censored
                     else 0.5 * z * z)
    return _sum(terms), b


def angle_potential(n: int, rng: random.Random) -> Built:
    """A 2-D chain's bond angles from the normalised dot product, k (acos(c) - theta0)^2
    (acos)."""
    atoms = max(3, n + 2)
    p = _syms("p", 2 * atoms)
    terms = []
    for i in range(atoms - 2):
        ax, ay = p[2 * i + 2] - p[2 * i], p[2 * i + 3] - p[2 * i + 1]
        bx, by = p[2 * i + 4] - p[2 * i + 2], p[2 * i + 5] - p[2 * i + 3]
        c = (ax * bx + ay * by) / F["sqrt"]((ax * ax + ay * ay) * (bx * bx + by * by))
        terms.append(_c(rng, 0.5, 2) * (F["acos"](c) - _c(rng, 0.3, 1.0)) ** 2)
    return _sum(terms), p
