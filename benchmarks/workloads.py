"""The suite's workloads: each is built once as a symgraph expression, and every peer gets the same
formula from it (SymPy via ``symgraph.to_sympy``, JAX/PyTorch/CasADi via benchmarks.convert).

A workload has an untimed ``prepare`` (work that defines the formula but is no tool's job, e.g.
deriving the pendulum's equations with sympy.physics.mechanics) and a timed ``build`` that makes
the symgraph DAG (counted in symgraph's setup). Points are drawn from a per-argument box where
the function and its gradient are finite.
"""

from __future__ import annotations

import functools
import math
import random
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from symgraph.ir.functions import FUNCTIONS as F
from symgraph.ir.node import Node, apply, symbols

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # tests/corpus.py holds the shared builders
    sys.path.insert(0, str(_ROOT))

from tests import corpus  # noqa: E402

Built = tuple[Node, list[Node]]


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    build: Callable[[object], Built]  # timed: prepared data -> (expression, argument symbols)
    box: Callable[[int], tuple[np.ndarray, np.ndarray]]  # n args -> (low, high) per argument
    prepare: Callable[[], object] = lambda: None  # untimed, cached per process
    handwritten: str | None = None  # key in benchmarks.handwritten.KERNELS
    tags: tuple[str, ...] = field(default=())

    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def point(self, n: int) -> np.ndarray:
        """The check point: the same in every process."""
        low, high = self.box(n)
        return np.random.default_rng(self.seed()).uniform(low, high)

    def batch(self, n: int, size: int) -> np.ndarray:
        low, high = self.box(n)
        return np.random.default_rng(self.seed() + 1).uniform(low, high, (size, n))


def _uniform_box(low: float, high: float) -> Callable[[int], tuple[np.ndarray, np.ndarray]]:
    return lambda n: (np.full(n, low), np.full(n, high))


# -- builders that tests/corpus.py does not have in the form the suite needs ---------------------


MLP_SHAPE = (3, 8, 10)  # inputs, hidden units, data points


@functools.cache
def mlp_data() -> tuple[np.ndarray, np.ndarray]:
    """Data of the MLP loss: the hand-written kernel uses the same arrays."""
    inputs, _, points = MLP_SHAPE
    rng = np.random.default_rng(2)
    return rng.uniform(-1, 1, (points, inputs)), rng.uniform(-1, 1, points)


def mlp(_: object = None) -> Built:
    """Mean squared error of a 2-layer tanh network; the weights are the inputs."""
    inputs, hidden, _ = MLP_SHAPE
    data, targets = mlp_data()
    w1 = [[symbols(f"w1_{i}_{j}") for j in range(inputs)] for i in range(hidden)]
    b1 = [symbols(f"b1_{i}") for i in range(hidden)]
    w2 = [symbols(f"w2_{i}") for i in range(hidden)]
    b2 = symbols("b2")
    loss = []
    for row, target in zip(data.tolist(), targets.tolist()):
        h = [F["tanh"](apply("add", *[w * d for w, d in zip(ws, row)], b)) for ws, b in zip(w1, b1)]
        prediction = apply("add", *[w * u for w, u in zip(w2, h)], b2)
        loss.append((prediction - target) ** 2)
    params = [w for ws in w1 for w in ws] + b1 + w2 + [b2]
    return apply("add", *loss) / len(loss), params


def nested(_: object = None, depth: int = 200) -> Built:
    """u <- y*f(u) + x, f in sin/cos/exp/log; exp and log see arguments that keep u in (0.7, 1.8)
    for x in [1, 1.5], y in [0.1, 0.3], so 200 levels stay finite (tests/corpus.nested does not).
    """
    x, y = symbols("x y")
    rng = random.Random(3)
    u = x
    for _ in range(depth):
        kind = rng.choice(["sin", "cos", "exp", "log"])
        inner = -u if kind == "exp" else u
        u = y * F[kind](inner) + x
    return u, [x, y]


def random_dag(_: object = None, size: int = 9_000, seed: int = 4) -> Built:
    """Heavy sharing: each new node takes one of the last 50 nodes and any earlier one. Every
    node stays in [-1, 1] (averages, products, bounded functions), so values never overflow."""
    rng = random.Random(seed)
    leaves = list(symbols("a b c d e"))
    pool: list[Node] = list(leaves)
    while len(pool) < size:
        a, b = rng.choice(pool[-50:]), rng.choice(pool)
        kind = rng.random()
        if kind < 0.35:
            pool.append((a + b) * 0.5)
        elif kind < 0.7:
            pool.append(a * b)
        else:
            name = rng.choice(["sin", "cos", "tanh", "sigmoid", "exp"])
            pool.append(F[name](a - 1.0) if name == "exp" else F[name](a))
    return apply("add", *pool[-20:]), leaves


PENDULUM_LINKS = 4


def pendulum_on_cart(links: int, masses, lengths):
    """Kinematics of an n-link pendulum on a cart (sympy.physics.mechanics): the inertial frame,
    coordinates q and speeds u (dynamic symbols), and particles (cart first); `masses` has
    links + 1 entries, `lengths` has links."""
    import sympy.physics.mechanics as me

    q = me.dynamicsymbols(f"q:{links + 1}")
    u = me.dynamicsymbols(f"u:{links + 1}")
    frame = me.ReferenceFrame("I")
    origin = me.Point("O")
    origin.set_vel(frame, 0)
    cart = origin.locatenew("P0", q[0] * frame.x)
    cart.set_vel(frame, u[0] * frame.x)
    particles = [me.Particle("Pa0", cart, masses[0])]
    previous = cart
    for i in range(links):
        link = frame.orientnew(f"B{i}", "Axis", [q[i + 1], frame.z])
        link.set_ang_vel(frame, u[i + 1] * frame.z)
        bob = previous.locatenew(f"P{i + 1}", lengths[i] * link.x)
        bob.v2pt_theory(previous, frame, link)
        particles.append(me.Particle(f"Pa{i + 1}", bob, masses[i + 1]))
        previous = bob
    return frame, q, u, particles


@functools.cache
def pendulum_energy_sympy(links: int = PENDULUM_LINKS):
    """Kinetic energy of an n-link pendulum on a cart, with numeric masses and lengths, in plain
    symbols q0.., u0.. (the states)."""
    import sympy as sp

    masses = [1.0] + [1.0 + 0.25 * (i + 1) for i in range(links)]
    lengths = [1.0 - 0.1 * i for i in range(links)]
    frame, q, u, particles = pendulum_on_cart(links, masses, lengths)
    states = sp.symbols(f"q0:{links + 1}", real=True) + sp.symbols(f"u0:{links + 1}", real=True)
    plain = dict(zip(list(q) + list(u), states))
    energy = sum(p.kinetic_energy(frame) for p in particles).subs(plain)
    return energy, [s.name for s in states]


def pendulum(prepared: object) -> Built:
    from symgraph.frontends.sympy_bridge import from_sympy

    energy, names = prepared
    return from_sympy(energy), [symbols(n)[0] for n in names]


def _pendulum_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    half = n // 2  # angles, then velocities
    return (np.r_[np.full(half, -math.pi), np.full(n - half, -2.0)],
            np.r_[np.full(half, math.pi), np.full(n - half, 2.0)])


def _black_scholes_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([50.0, 50.0, 0.1, 0.0, 0.1]), np.array([150.0, 150.0, 2.0, 0.1, 0.5])


def _nested_box(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([1.0, 0.1]), np.array([1.5, 0.3])


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("polynomial", "seed polynomial x**2 + 2x + 1", lambda _: corpus.polynomial(),
             _uniform_box(-2, 2), handwritten="polynomial", tags=("quick",)),
    Workload("linear_mse", "MSE of a linear model, 10 points", lambda _: corpus.linear_mse(10),
             _uniform_box(-2, 2)),
    Workload("rosenbrock10", "Rosenbrock, 10 variables", lambda _: corpus.rosenbrock(10),
             _uniform_box(-2, 2), handwritten="rosenbrock", tags=("quick",)),
    Workload("rosenbrock100", "Rosenbrock, 100 variables", lambda _: corpus.rosenbrock(100),
             _uniform_box(-2, 2), handwritten="rosenbrock"),
    Workload("mlp", "tanh MLP 3-8-1 loss, 10 points, 41 weights", mlp, _uniform_box(-1, 1),
             handwritten="mlp"),
    Workload("black_scholes", "Black-Scholes call (erf)", lambda _: corpus.black_scholes(),
             _black_scholes_box),
    Workload("nested200", "200-deep sin/cos/exp/log nesting", nested, _nested_box),
    Workload("pendulum4", f"{PENDULUM_LINKS}-link pendulum on a cart: kinetic energy",
             pendulum, _pendulum_box, prepare=pendulum_energy_sympy),
    Workload("random_dag", "random DAG, ~5,000 shared nodes", random_dag, _uniform_box(-1, 1)),
]}


@functools.cache
def workload(name: str) -> Workload:
    """A named workload of the suite, or a generated one: ``family@n`` (benchmarks/families.py)."""
    if name in WORKLOADS:
        return WORKLOADS[name]
    from benchmarks import families

    family, n = families.parse_name(name)
    return Workload(name, f"{family.name} (n = {n}, {family.kind})",
                    lambda _: family.make(n), family.box, tags=("generated", family.kind))


@functools.cache
def prepared(name: str) -> object:
    return workload(name).prepare()


def build(name: str) -> Built:
    """The workload's expression (its untimed preparation is cached per process)."""
    return workload(name).build(prepared(name))
