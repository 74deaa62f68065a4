"""Define, then run (TensorFlow-1 style): placeholders, variables, optimizers and a Session.

    >>> x = placeholder("x", (1,)); y_true = placeholder("y_true", (1,))
    >>> W = Variable([2.0], name="W"); b = Variable([1.0], name="b")
    >>> loss = reduce_mean(square(W * x + b - y_true))
    >>> train = GradientDescentOptimizer(0.01).minimize(loss)
    >>> with Session() as sess:
    ...     _, value = sess.run([train, loss], feed_dict={x: [1.0], y_true: [2.0]})

The graph is tensors of scalar nodes (`symgraph.tensor`); nothing runs while it is built.
`minimize` builds the update of every variable from `differentiate.grad` as nodes, and
`Session.run` compiles each distinct fetch list ONCE into one kernel over
``[state..., fed placeholders...]`` whose outputs are ``[fetched values..., new state...]``:
forward, gradient and update fused in a single call. All fetched values see the state from
before the update (the loss TF prints is the loss before the step).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import tensor
from .api import CompiledFunction
from .api import compile as compile_kernel
from .differentiate import grad, vjp
from .graph import Node, free_symbols
from .tensor import FUNCTIONS, Tensor, as_tensor, stack_nodes, symbolic

__all__ = ["Graph", "Placeholder", "Variable", "Session", "TrainOp", "placeholder",
           "get_default_graph", "reset_default_graph", "gradients", "global_variables_initializer",
           "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "add", "multiply",
           "square", "matmul", "reduce_mean", "reduce_sum"]


class GraphError(ValueError):
    """Bad use of a static graph: unknown or missing feeds, shapes, names."""


class Placeholder(Tensor):
    """An input whose value is fed at every `Session.run` (``feed_dict={x: value}``)."""

    __slots__ = ()


class Variable(Tensor):
    """State kept by a Session between runs; starts at `initial`, changed by optimizers."""

    __slots__ = ("initial", "trainable")

    def __init__(self, initial: Any, name: str | None = None, trainable: bool = True,
                 graph: Graph | None = None) -> None:
        graph = graph or get_default_graph()
        value = np.array(initial, dtype=np.float64)
        name = graph._claim(name, "Variable")
        super().__init__(symbolic(name, value.shape).nodes, "variable", name)
        self.initial = value
        self.trainable = trainable
        graph._register(self)


class Graph:
    """Placeholders and variables by name, and which symbol belongs to which of them."""

    def __init__(self) -> None:
        self.placeholders: list[Placeholder] = []
        self.variables: list[Variable] = []
        self.owner: dict[Node, Tensor] = {}  # symbol -> its placeholder or variable

    def _claim(self, name: str | None, default: str) -> str:
        taken = {t.name for t in self.placeholders + self.variables}
        if name is None:  # TF's scheme: Variable, Variable_1, ...
            name, k = default, 1
            while name in taken:
                name, k = f"{default}_{k}", k + 1
        elif name in taken:
            raise GraphError(f"the name {name!r} is already used in this graph")
        return name

    def _register(self, t: Tensor) -> None:
        (self.variables if isinstance(t, Variable) else self.placeholders).append(t)
        for node in t.nodes.flat:
            self.owner[node] = t

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        global _default_graph
        previous, _default_graph = _default_graph, self
        try:
            yield self
        finally:
            _default_graph = previous


_default_graph = Graph()


def get_default_graph() -> Graph:
    return _default_graph


def reset_default_graph() -> Graph:
    global _default_graph
    _default_graph = Graph()
    return _default_graph


def placeholder(name: str, shape: Sequence[int] | int = (), graph: Graph | None = None
                ) -> Placeholder:
    """A fed input of fixed `shape` (the graph is expanded to scalars, so shapes are known)."""
    graph = graph or get_default_graph()
    t = symbolic(graph._claim(name, "Placeholder"), shape)
    result = Placeholder(t.nodes, "placeholder", t.name)
    graph._register(result)
    return result


# -- TensorFlow-style functions (every op of the table, too: `static.tanh(x)`) ---------------------


def add(a: Any, b: Any, name: str | None = None) -> Tensor:
    return _named(as_tensor(a) + b, name)


def multiply(a: Any, b: Any, name: str | None = None) -> Tensor:
    return _named(as_tensor(a) * b, name)


def square(a: Any, name: str | None = None) -> Tensor:
    return _named(as_tensor(a).square(), name)


def matmul(a: Any, b: Any, name: str | None = None) -> Tensor:
    return _named(as_tensor(a) @ b, name)


def reduce_mean(a: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    return _named(tensor.reduce_mean(a, axis), name)


def reduce_sum(a: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    return _named(tensor.reduce_sum(a, axis), name)


def _named(t: Tensor, name: str | None) -> Tensor:
    t.name = name or t.name
    return t


def __getattr__(name: str):
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _symbols_of(xs: Sequence[Tensor]) -> list[Node]:
    for x in xs:
        if not isinstance(x, (Placeholder, Variable)):
            raise GraphError(f"derivatives are taken with respect to placeholders or "
                             f"variables, got {x!r}")
    return [node for x in xs for node in x.nodes.flat]


def gradients(ys: Tensor | Sequence[Tensor], xs: Tensor | Sequence[Tensor]) -> list[Tensor]:
    """d(sum of all elements of ys)/dx for each x, shaped like x (TF's ``tf.gradients``)."""
    ys = [ys] if isinstance(ys, Tensor) else list(ys)
    xs = [xs] if isinstance(xs, Tensor) else list(xs)
    outputs = [node for y in ys for node in y.nodes.flat]
    flat = vjp(outputs, [1.0] * len(outputs), _symbols_of(xs))
    result, start = [], 0
    for x in xs:
        result.append(stack_nodes(flat[start:start + x.size], x.shape, "gradient"))
        start += x.size
    return result


# -- optimizers: updates as nodes ------------------------------------------------------------------


class TrainOp:
    """What `minimize` returns: fetch it to take one step. Running it gives None."""

    def __init__(self, loss: Tensor, updates: list[tuple[Variable, Tensor]], title: str) -> None:
        self.loss, self.updates, self.title = loss, updates, title

    def __repr__(self) -> str:
        return f"<TrainOp {self.title}: {', '.join(v.name for v, _ in self.updates)}>"


class Optimizer:
    title = "Optimizer"

    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = float(learning_rate)

    def minimize(self, loss: Tensor, var_list: Sequence[Variable] | None = None,
                 graph: Graph | None = None) -> TrainOp:
        """One fused step: ``new state = update(state, d loss / d variables)``."""
        graph = graph or get_default_graph()
        if not isinstance(loss, Tensor) or loss.size != 1:
            raise GraphError(f"minimize needs a scalar loss, got {loss!r}")
        variables = [v for v in graph.variables if v.trainable] if var_list is None \
            else list(var_list)
        if not variables:
            raise GraphError("there are no trainable variables to minimize over")
        flat = grad(loss.nodes.flat[0], _symbols_of(variables))
        updates, start = [], 0
        for v in variables:
            g = stack_nodes(flat[start:start + v.size], v.shape, "gradient")
            updates.extend(self._update(v, g, graph))
            start += v.size
        updates.extend(self._finish(graph))
        return TrainOp(loss, updates, f"{self.title} (lr {self.learning_rate:g})")

    def _slot(self, v: Variable, suffix: str, graph: Graph, fill: float = 0.0) -> Variable:
        name = graph._claim(None, f"{v.name}/{suffix}")  # W/Momentum, W/Momentum_1, ...
        return Variable(np.full(v.shape, fill), name, False, graph)

    def _update(self, v: Variable, g: Tensor, graph: Graph) -> list[tuple[Variable, Tensor]]:
        raise NotImplementedError

    def _finish(self, graph: Graph) -> list[tuple[Variable, Tensor]]:
        return []


class GradientDescentOptimizer(Optimizer):
    title = "Gradient Descent"

    def _update(self, v, g, graph):
        return [(v, v - self.learning_rate * g)]


class MomentumOptimizer(Optimizer):
    """TF's rule: ``accum = momentum * accum + g; v -= lr * accum``."""

    title = "Momentum"

    def __init__(self, learning_rate: float, momentum: float) -> None:
        super().__init__(learning_rate)
        self.momentum = float(momentum)

    def _update(self, v, g, graph):
        accum = self._slot(v, "Momentum", graph)
        new_accum = self.momentum * accum + g
        return [(accum, new_accum), (v, v - self.learning_rate * new_accum)]


class AdamOptimizer(Optimizer):
    """TF's Adam, bias correction through the state ``beta1_power`` and ``beta2_power``."""

    title = "Adam"

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8) -> None:
        super().__init__(learning_rate)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self._powers: tuple[Variable, Variable] | None = None

    def _update(self, v, g, graph):
        if self._powers is None:
            self._powers = (Variable(self.beta1, graph._claim(None, "beta1_power"), False, graph),
                            Variable(self.beta2, graph._claim(None, "beta2_power"), False, graph))
        p1, p2 = self._powers
        m, s = self._slot(v, "Adam", graph), self._slot(v, "Adam_1", graph)
        new_m = self.beta1 * m + (1.0 - self.beta1) * g
        new_s = self.beta2 * s + (1.0 - self.beta2) * g.square()
        rate = self.learning_rate * (1.0 - p2).sqrt() / (1.0 - p1)
        return [(m, new_m), (s, new_s), (v, v - rate * new_m / (new_s.sqrt() + self.epsilon))]

    def _finish(self, graph):
        p1, p2 = self._powers
        self._powers = None
        return [(p1, p1 * self.beta1), (p2, p2 * self.beta2)]


class Initializer:
    """Running it resets every variable of the session's graph to its initial value."""


def global_variables_initializer() -> Initializer:
    return Initializer()


# -- running --------------------------------------------------------------------------------------


class _Plan:
    """One compiled kernel for one fetch list, and where each value goes in and comes out."""

    def __init__(self, fetches: list, graph: Graph, backend: str, cache_dir) -> None:
        self.fetches = fetches  # keeps the fetched objects alive while their ids are the key
        outputs: list[Node] = []
        self.slices: list[tuple[int, int, tuple[int, ...]] | None] = []
        self.writes: list[tuple[Variable, int, int]] = []
        for f in fetches:
            if isinstance(f, Tensor):
                self.slices.append((len(outputs), len(outputs) + f.size, f.shape))
                outputs.extend(f.nodes.flat)
            else:
                self.slices.append(None)
        for op in (f for f in fetches if isinstance(f, TrainOp)):
            for v, new in op.updates:
                if any(v is w for w, _, _ in self.writes):
                    raise GraphError(f"variable {v.name!r} is updated twice in one run")
                self.writes.append((v, len(outputs), len(outputs) + v.size))
                outputs.extend(new.nodes.flat)
        owners: dict[int, Tensor] = {}
        for s in free_symbols(outputs):
            owner = graph.owner.get(s)
            if owner is None:
                raise GraphError(f"the fetches depend on {s.value!r}, which is neither a "
                                 "placeholder nor a variable of the session's graph")
            owners.setdefault(id(owner), owner)
        self.state = [v for v in graph.variables if id(v) in owners or
                      any(v is w for w, _, _ in self.writes)]
        self.feeds = [p for p in graph.placeholders if id(p) in owners]
        args = [n for t in self.state + self.feeds for n in t.nodes.flat]
        self.kernel: CompiledFunction = compile_kernel(outputs, args, wrt=[], backend=backend,
                                                       cache_dir=cache_dir)


class Session:
    """Holds the variables' values; `run` evaluates fetches with one kernel call each time."""

    def __init__(self, graph: Graph | None = None, backend: str = "numba",
                 cache_dir: str | os.PathLike | None = None) -> None:
        self.graph = graph or get_default_graph()
        self.backend, self.cache_dir = backend, cache_dir
        self.values: dict[int, np.ndarray] = {}
        self._plans: dict[tuple[int, ...], _Plan] = {}
        self.kernel_calls = 0

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._plans.clear()

    @property
    def compiled_kernels(self) -> int:
        """How many kernels this session compiled: one per distinct fetch list."""
        return len(self._plans)

    def value(self, v: Variable) -> np.ndarray:
        """The current value of a variable (its initial value until a step changes it)."""
        return self.values.get(id(v), v.initial).copy()

    def run(self, fetches: Any, feed_dict: dict | None = None) -> Any:
        """Values of `fetches`: one fetch, or a list of them (a list inside too, as from
        `gradients`). Tensors give arrays (a 0-d float64 for a scalar); a TrainOp takes its
        step and gives None; an initializer resets the variables."""
        single = not isinstance(fetches, (list, tuple))
        items = [fetches] if single else list(fetches)
        flat, layout = [], []
        for item in items:
            group = list(item) if isinstance(item, (list, tuple)) else [item]
            layout.append(len(group) if isinstance(item, (list, tuple)) else None)
            flat.extend(group)
        for f in flat:
            if not isinstance(f, (Tensor, TrainOp, Initializer)):
                raise GraphError(f"cannot fetch {f!r}: fetch tensors, train ops or an "
                                 "initializer (one level of lists at most)")
        if any(isinstance(f, Initializer) for f in flat):
            self.values.clear()
        values = self._execute([f for f in flat if not isinstance(f, Initializer)],
                               feed_dict or {})
        results = [None if isinstance(f, Initializer) else values.pop(0) for f in flat]
        out = []
        for size in layout:
            out.append(results.pop(0) if size is None else [results.pop(0) for _ in range(size)])
        return out[0] if single else out

    def _check_feed(self, feed_dict: dict) -> dict[int, np.ndarray]:
        by_name = {p.name: p for p in self.graph.placeholders}
        fed: dict[int, np.ndarray] = {}
        for key, value in feed_dict.items():
            p = by_name.get(key) if isinstance(key, str) else key
            if not isinstance(p, Placeholder) or by_name.get(p.name) is not p:
                raise GraphError(f"feed_dict key {key!r} is not a placeholder of this graph")
            array = np.asarray(value, dtype=np.float64)
            if array.shape != p.shape:
                raise GraphError(f"shape mismatch: placeholder {p.name!r} has shape {p.shape}, "
                                 f"fed a value of shape {array.shape}")
            fed[id(p)] = array
        return fed

    def _execute(self, fetches: list, feed_dict: dict) -> list:
        fed = self._check_feed(feed_dict)
        if not fetches:
            return []
        key = tuple(id(f) for f in fetches)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan(fetches, self.graph, self.backend, self.cache_dir)
        missing = [p.name for p in plan.feeds if id(p) not in fed]
        if missing:
            raise GraphError(f"placeholder(s) {missing} need a value: add them to feed_dict")
        point = np.concatenate([np.ravel(self.values.get(id(v), v.initial)) for v in plan.state]
                               + [fed[id(p)].ravel() for p in plan.feeds] + [np.empty(0)])
        out = plan.kernel(point)  # the one kernel call: fetches and new state together
        self.kernel_calls += 1
        for v, start, stop in plan.writes:
            self.values[id(v)] = out[start:stop].reshape(v.shape)
        return [None if s is None else out[s[0]:s[1]].reshape(s[2])[()] for s in plan.slices]
