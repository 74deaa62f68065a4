"""Define, then run (TensorFlow-1 style): placeholders, variables, optimizers and a Session.

    >>> x = placeholder("x", (1,)); y_true = placeholder("y_true", (1,))
    >>> W = Variable([2.0], name="W"); b = Variable([1.0], name="b")
    >>> loss = reduce_mean(square(W * x + b - y_true))
    >>> train = GradientDescentOptimizer(0.01).minimize(loss)
    >>> with Session() as sess:
    ...     _, value = sess.run([train, loss], feed_dict={x: [1.0], y_true: [2.0]})

The graph is tensors of scalar nodes (`symgraph.tensor`); nothing runs while it is built.
`minimize` builds the update of every variable from `differentiate.grad` as nodes, and
`Session.run` (in `graphs.session`; the public `symgraph.static` has both) compiles
each distinct fetch list once into one kernel: forward, gradient and update fused in a single
call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..frontends.values import real_array
from ..ir.node import Node
from ..ir.ops import OPS
from . import batch
from .dtypes import as_dtype
from .tensor import ShapeError, Tensor, as_tensor, function_of, stack_nodes, symbolic

__all__ = ["Graph", "GraphError", "Placeholder", "Variable", "TrainOp", "placeholder",
           "get_default_graph", "reset_default_graph", "gradients", "global_variables_initializer",
           "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "AdagradOptimizer",
           "RMSPropOptimizer", "add", "multiply",
           "square", "matmul", "reduce_mean", "reduce_sum"]


class GraphError(ValueError):
    """Bad use of a static graph: unknown or missing feeds, shapes, names."""


class Placeholder(Tensor):
    """An input whose value is fed at every `Session.run` (``feed_dict={x: value}``). With a
    None first dimension (or no shape) it is batched: its nodes are one row, and any number of
    rows may be fed (graphs.batch); `unknown` says no shape was given (every element fed is a
    row, and per-row results take the fed array's shape)."""

    __slots__ = ("dtype", "unknown")


class Variable(Tensor):
    """State kept by a Session between runs; starts at `initial`, changed by optimizers."""

    __slots__ = ("initial", "trainable", "dtype")

    def __init__(self, initial: Any, name: str | None = None, trainable: bool = True,
                 graph: Graph | None = None, dtype: Any = None) -> None:
        graph = graph or get_default_graph()
        self.dtype = as_dtype(dtype)
        value = np.array(real_array(initial, "a Variable's initial value"))
        if self.dtype.name == "float32":
            value = value.astype(np.float32).astype(np.float64)  # a float32 variable's value
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
        base = default if name is None else name
        name, k = base, 1
        while name in taken:  # TF's scheme: x, x_1, x_2, ... (Variable, Variable_1, ...)
            name, k = f"{base}_{k}", k + 1
        return name

    def _register(self, t: Tensor) -> None:
        clash = next((n.value for n in t.nodes.flat if n in self.owner), None)
        if clash is not None:  # e.g. a scalar named "W[0]" next to an array named "W"
            raise GraphError(f"the element name {clash!r} of {t.name!r} is already used in "
                             "this graph")
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


def placeholder(dtype: Any = None, shape: Any = None, name: str | None = None,
                graph: Graph | None = None) -> Placeholder:
    """A fed input: TensorFlow's ``placeholder(tf.float32, shape, name)``, or
    ``placeholder("x", (2,))`` (a name first: a float64 input of that shape, () by default).

    A fixed shape is expanded to one symbol per element. A None first dimension, or no shape at
    all, makes a batched placeholder: one row of symbols, fed with any number of rows and
    reduced over them in a loop (graphs.batch). Only the first dimension may be None."""
    if isinstance(dtype, str):  # the name-first spelling
        dtype, shape, name = None, () if shape is None else shape, dtype
    dtype = as_dtype(dtype)
    graph = graph or get_default_graph()
    unknown = shape is None
    dims = () if unknown else (shape,) if isinstance(shape, int) else tuple(shape)
    rows = unknown or (len(dims) > 0 and dims[0] is None)
    row = dims[1:] if rows and not unknown else () if unknown else dims
    if any(d is None for d in row):
        raise GraphError(f"placeholder shape {tuple(dims)}: only the first (batch) dimension "
                         "may be None")
    try:
        t = symbolic(graph._claim(name, "Placeholder"), tuple(int(d) for d in row))
    except (TypeError, ValueError) as error:
        if isinstance(error, ShapeError):
            raise
        raise GraphError(f"placeholder shape must be None or a sequence of ints and None (the "
                         f"first only), got {shape!r}") from None
    result = Placeholder(t.nodes, "placeholder", t.name, batched=rows)
    result.dtype, result.unknown = dtype, unknown
    if rows:
        batch.row_symbols(list(t.nodes.flat))
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


def reduce_mean(a: Any, axis: Any = None, name: str | None = None) -> Tensor:
    return _named(batch.reduce_tensor(as_tensor(a), axis, "mean"), name)


def reduce_sum(a: Any, axis: Any = None, name: str | None = None) -> Tensor:
    return _named(batch.reduce_tensor(as_tensor(a), axis, "sum"), name)


def _named(t: Tensor, name: str | None) -> Tensor:
    t.name = name or t.name
    return t


def __getattr__(name: str) -> Any:
    """Every op of the table, elementwise (``static.tanh(x)``)."""
    if name in OPS:  # registered ops too
        return function_of(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _outputs_of(ys: Sequence[Tensor]) -> tuple[list[Node], list[bool]]:
    nodes = [node for y in ys for node in y.nodes.flat]
    return nodes, [y.batched for y in ys for _ in range(y.size)]


def _symbols_of(xs: Sequence[Tensor]) -> list[Node]:
    for x in xs:
        if not isinstance(x, (Placeholder, Variable)):
            raise GraphError(f"derivatives are taken with respect to placeholders or "
                             f"variables, got {x!r}")
    return [node for x in xs for node in x.nodes.flat]


def gradients(ys: Tensor | Sequence[Tensor], xs: Tensor | Sequence[Tensor]) -> list[Tensor]:
    """d(sum of all elements of ys)/dx for each x, shaped like x (TF's ``tf.gradients``):
    a list, one tensor per x (batched for a batched placeholder: per row)."""
    ys = [ys] if isinstance(ys, Tensor) else list(ys)
    xs = [xs] if isinstance(xs, Tensor) else list(xs)
    flat = batch.gradients(*_outputs_of(ys), _symbols_of(xs))
    result, start = [], 0
    for x in xs:
        g = stack_nodes(flat[start:start + x.size], x.shape, "gradient")
        g.batched = x.batched
        result.append(g)
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
        if not isinstance(loss, Tensor) or loss.size != 1 and not loss.batched:
            raise GraphError(f"minimize needs a scalar loss, got {loss!r}")
        variables = [v for v in graph.variables if v.trainable] if var_list is None \
            else list(var_list)
        if not variables:
            raise GraphError("there are no trainable variables to minimize over")
        if loss.batched:
            raise GraphError(f"minimize needs a scalar loss; {loss!r} has one value per row "
                             "(reduce it over the rows: reduce_mean or reduce_sum)")
        flat = batch.gradients([loss.nodes.flat[0]], [False], _symbols_of(variables))
        updates, start = [], 0
        for v in variables:
            g = stack_nodes(flat[start:start + v.size], v.shape, "gradient")
            updates.extend(self._update(v, g, graph))
            start += v.size
        updates.extend(self._finish(graph))
        return TrainOp(loss, updates, f"{self.title} (lr {self.learning_rate:g})")

    def _slot(self, v: Variable, suffix: str, graph: Graph, fill: float = 0.0) -> Variable:
        name = graph._claim(None, f"{v.name}/{suffix}")  # W/Momentum, W/Momentum_1, ...
        return Variable(np.full(v.shape, fill), name, False, graph, dtype=v.dtype)

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
            self._powers = tuple(Variable(beta, graph._claim(None, f"beta{k}_power"), False,
                                          graph, dtype=v.dtype)
                                 for k, beta in ((1, self.beta1), (2, self.beta2)))
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


class AdagradOptimizer(Optimizer):
    """TF's rule: ``accum += g * g; v -= lr * g / sqrt(accum)``."""

    title = "Adagrad"

    def __init__(self, learning_rate: float, initial_accumulator_value: float = 0.1) -> None:
        super().__init__(learning_rate)
        self.initial = float(initial_accumulator_value)

    def _update(self, v, g, graph):
        accum = self._slot(v, "Adagrad", graph, self.initial)
        new_accum = accum + g.square()
        return [(accum, new_accum), (v, v - self.learning_rate * g / new_accum.sqrt())]


class RMSPropOptimizer(Optimizer):
    """TF's rule (no centering): ``ms = decay * ms + (1 - decay) * g * g;
    mom = momentum * mom + lr * g / sqrt(ms + epsilon); v -= mom``."""

    title = "RMSProp"

    def __init__(self, learning_rate: float, decay: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-10) -> None:
        super().__init__(learning_rate)
        self.decay, self.momentum, self.epsilon = float(decay), float(momentum), float(epsilon)

    def _update(self, v, g, graph):
        ms, mom = self._slot(v, "RMSProp", graph, 1.0), self._slot(v, "RMSProp_1", graph)
        new_ms = self.decay * ms + (1.0 - self.decay) * g.square()
        new_mom = self.momentum * mom + self.learning_rate * g / (new_ms + self.epsilon).sqrt()
        return [(ms, new_ms), (mom, new_mom), (v, v - new_mom)]


class Initializer:
    """Running it resets every variable of the session's graph to its initial value."""


def global_variables_initializer() -> Initializer:
    return Initializer()
