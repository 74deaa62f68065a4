"""Define by run (PyTorch style): eager NumPy values, with the graph recorded on the way.

    >>> W = tensor([2.0], requires_grad=True); b = tensor([1.0], requires_grad=True)
    >>> loss = (W * tensor([1.0]) + b - tensor([2.0])).pow(2).mean()
    >>> loss.backward(); W.grad.item()
    2.0

Every operation computes its value at once with the op table's NumPy meaning (so Python's
``if``/``for`` can look at it) and, when an operand requires grad, also records the operation as
scalar symgraph nodes (`symgraph.tensor`). Leaves created with ``requires_grad=True`` are symbols;
anything else enters the record as constants. `backward` takes `differentiate.vjp` of the record
and evaluates it with `graph.evaluate`. The record is rebuilt on every run, so the graph has
whatever shape the Python code gave it this time. `graphs.freeze` compiles a traced function
(``symgraph.dynamic.freeze``).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..frontends.values import real_array
from ..ir.ops import OPS
from . import batch, eager_backward
from . import tensor as sym
from .tensor import ShapeError

__all__ = ["Tensor", "tensor", "no_grad", "SGD", "ShapeError"]

class _State(threading.local):
    """Per thread, as PyTorch's grad mode is: one thread inside `no_grad` (or tracing for
    `freeze`) does not stop another's recording. Indexed like the dict it replaces."""

    def __init__(self) -> None:
        self.grad, self.trace = True, None  # trace: the guard list while `freeze` traces

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)


_state = _State()
_leaf_names: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # symbol name -> leaf
_counter = itertools.count()


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Operations inside are not recorded (outside a trace), e.g. for parameter updates."""
    previous, _state["grad"] = _state["grad"], False
    try:
        yield
    finally:
        _state["grad"] = previous


def _unique_base(name: str | None, shape: tuple[int, ...]) -> str:
    # Distinct live leaves need distinct symbols, or their gradients would merge.
    candidates = itertools.chain([name], (f"{name}_{k}" for k in itertools.count(2))) if name \
        else (f"v{next(_counter)}" for _ in itertools.count())
    for base in candidates:
        if not any(n in _leaf_names for n in sym.element_names(base, shape)):
            return base
    raise AssertionError("unreachable")


class Tensor:
    """An eager value (float64 ndarray), and its recorded graph if it requires grad."""

    __slots__ = ("_value", "_graph", "_leaves", "_version", "requires_grad", "_grad", "name",
                 "_data_graph", "__weakref__")
    __array_ufunc__ = None  # ndarray <op> Tensor defers to Tensor's reflected operators

    def __init__(self, value: np.ndarray, graph: sym.Tensor | None = None,
                 leaves: tuple[tuple[Tensor, int], ...] = (), name: str | None = None) -> None:
        self._value = value
        self._graph = graph
        self._leaves = leaves  # (leaf, the leaf's version when it was used) for each leaf
        self._version = 0  # bumped when a leaf's values change in place
        self.requires_grad = graph is not None
        self._grad: Tensor | None = None
        self.name = name
        self._data_graph: sym.Tensor | None = None  # its symbols as data (eager_backward)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Make this tensor a leaf whose gradient `backward` fills (or stop that)."""
        if self._graph is not None and not self.is_leaf:
            raise RuntimeError("requires_grad_ applies to leaf tensors; use detach() first")
        if requires_grad and self._graph is None:
            base = _unique_base(self.name, self.shape)
            self._graph = sym.symbolic(base, self.shape, op="leaf")
            self._graph.name = self.name or base
            for n in sym.element_names(base, self.shape):
                _leaf_names[n] = self
            self._leaves = ((self, 0),)
        elif not requires_grad:
            self._graph, self._leaves = None, ()
        self.requires_grad = requires_grad
        return self

    # -- queries ------------------------------------------------------------------------------
    shape = property(lambda self: self._value.shape)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)
    is_leaf = property(lambda self: self._graph is None or self._leaves[0][0] is self)
    graph = property(lambda self: self._graph, doc="The recorded graph (a symbolic tensor).")

    def dim(self) -> int: return self.ndim
    def numel(self) -> int: return self.size

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def _guard(self, kind: str, observed) -> None:
        # While freezing, a value that Python looks at decides the trace: remember it.
        guards = _state["trace"]
        if guards is not None and self._graph is not None:
            guards.append((kind, self._graph.flat_nodes(), observed,
                           [leaf for leaf, _ in self._leaves]))

    def item(self) -> float:
        if self.size != 1:
            raise ValueError(f"item() needs a one-element tensor, this one has shape {self.shape}")
        value = float(self._value.reshape(-1)[0])
        self._guard("value", [value])
        return value

    def numpy(self) -> np.ndarray:
        self._guard("value", self._value.ravel().tolist())
        return self._value.copy()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        values = self.numpy()  # np.asarray(t) reads values like numpy(): guarded when tracing
        return values if dtype is None else values.astype(dtype)

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous")
        truth = bool(self._value.reshape(-1)[0])
        self._guard("truth", [truth])
        return truth

    def __float__(self) -> float: return self.item()
    def __int__(self) -> int: return int(self.item())

    def __format__(self, spec: str) -> str:
        return format(self.item(), spec) if self.ndim == 0 else format(str(self), spec)

    def __repr__(self) -> str:
        text = np.array2string(self._value, separator=", ")
        return f"tensor({text}{', requires_grad=True' if self.requires_grad else ''})"

    # -- gradients ----------------------------------------------------------------------------
    @property
    def grad(self) -> Tensor:
        """The gradient `backward` accumulated here; reading it before then is an error."""
        if self._grad is not None:
            return self._grad
        if not self.requires_grad:
            raise RuntimeError("this tensor does not require grad, so it has no .grad; create "
                               "it with requires_grad=True")
        if not self.is_leaf:
            raise RuntimeError(".grad is kept on leaf tensors only (those created with "
                               "requires_grad=True), not on computed results")
        raise RuntimeError(".grad is not available before backward(): call backward() on a "
                           "result computed from this tensor first")

    @grad.setter
    def grad(self, value: Any) -> None:
        self._grad = None if value is None else Tensor(_data(value).copy())

    def backward(self, gradient: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into ``leaf.grad`` for every leaf that requires grad.

        A one-element tensor has the implicit seed 1; any other needs ``gradient=`` (same shape),
        giving the vector-Jacobian product ``sum(gradient * d self / d leaf)``.
        """
        if _state["trace"] is not None:
            raise RuntimeError("backward() cannot run inside a function being frozen; freeze "
                               "the loss and use value_and_grad instead")
        if self._graph is None:
            raise RuntimeError("backward() needs a result computed from a tensor with "
                               "requires_grad=True; this one does not require grad")
        if gradient is None:
            if self.size != 1:
                raise RuntimeError(f"backward() on a non-scalar tensor (shape {self.shape}) "
                                   "needs a seed: pass gradient= an array of that shape")
            seed = np.ones(self.shape)
        else:
            seed = _data(gradient)
            if seed.shape != self.shape:
                raise ShapeError(f"the gradient seed has shape {seed.shape}, but the tensor "
                                 f"has shape {self.shape}")
        stale = [leaf.name or "a leaf" for leaf, seen in self._leaves
                 if leaf._version != seen and leaf is not self]
        if stale:
            raise RuntimeError(f"{', '.join(stale)} changed in place after this result was "
                               "computed from it; compute the result again, then backward()")
        leaves = [t for t, _ in self._leaves if t.requires_grad and t._graph is not None]
        inputs = [t for t, _ in self._leaves if t._data_graph is not None and t._graph is None]
        grads = eager_backward.backward(self._graph.flat_nodes(), self._graph.batched,
                                        None if gradient is None else seed, leaves, inputs)
        for leaf, g in zip(leaves, grads):
            leaf._grad = Tensor(g if leaf._grad is None else leaf._grad._value + g)

    def detach(self) -> Tensor:
        """The same values (shared, like PyTorch), outside the graph. While freezing, the
        values become constants of the trace, so they are guarded like `item()`."""
        self._guard("value", self._value.ravel().tolist())
        return Tensor(self._value, name=self.name)

    def _set_data(self, value: Any) -> None:
        new = _data(value)
        if new.shape != self.shape:
            raise ShapeError(f"cannot set data of shape {new.shape} on a tensor of shape "
                             f"{self.shape}")
        self._value = new if new is self._value else new.copy()
        self._version += 1

    data = property(detach, _set_data,
                    doc="``detach()``: ``W.data -= lr * W.grad`` updates W in place.")

    # -- arithmetic -----------------------------------------------------------------------------
    def __add__(self, other): return _elementwise("add", self, other)
    def __radd__(self, other): return _elementwise("add", other, self)
    def __sub__(self, other): return _op(np.subtract, sym.Tensor.__sub__, self, other)
    def __rsub__(self, other): return _op(np.subtract, sym.Tensor.__sub__, other, self)
    def __mul__(self, other): return _elementwise("mul", self, other)
    def __rmul__(self, other): return _elementwise("mul", other, self)
    def __truediv__(self, other): return _elementwise("div", self, other)
    def __rtruediv__(self, other): return _elementwise("div", other, self)
    def __pow__(self, other): return _elementwise("pow", self, other)
    def __rpow__(self, other): return _elementwise("pow", other, self)
    def __neg__(self): return _elementwise("neg", self)
    def __pos__(self): return self
    def __abs__(self): return _elementwise("abs", self)
    def __lt__(self, other): return _elementwise("lt", self, other)
    def __le__(self, other): return _elementwise("le", self, other)
    def __gt__(self, other): return _elementwise("gt", self, other)
    def __ge__(self, other): return _elementwise("ge", self, other)
    def __matmul__(self, other): return _op(_matmul, sym.matmul, self, other)
    def __rmatmul__(self, other): return _op(_matmul, sym.matmul, other, self)
    # == stays identity (tensors are dict keys and list members); use .eq() elementwise.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def eq(self, other) -> Tensor: return _elementwise("eq", self, other)
    def call(self, op: str, *others) -> Tensor: return _elementwise(op, self, *others)
    def pow(self, exponent) -> Tensor: return _elementwise("pow", self, exponent)
    def square(self) -> Tensor: return _op(np.square, sym.Tensor.square, self)
    # t.exp(), t.abs(), ...: one method per op with the table's `method` trait (see below)

    def sum(self, dim: int | None = None) -> Tensor:
        return _op(lambda v: np.sum(v, axis=dim), lambda g: batch.reduce_tensor(g, dim, "sum"),
                   self)

    def mean(self, dim: int | None = None) -> Tensor:
        return _op(lambda v: np.mean(v, axis=dim),
                   lambda g: batch.reduce_tensor(g, dim, "mean"), self)

    def reshape(self, *shape) -> Tensor:
        return _op(lambda v: v.reshape(*shape), lambda g: g.reshape(*shape), self)

    view = reshape

    def flatten(self) -> Tensor:
        return self.reshape(-1)

    @property
    def T(self) -> Tensor:
        return _op(lambda v: v.T, lambda g: g.T, self)

    def __getitem__(self, index) -> Tensor:
        return _op(lambda v: v[index], lambda g: g[index], self)

    # -- in place (parameter updates under no_grad) ---------------------------------------------
    def _inplace(self, operator: Callable[[Tensor, Any], Tensor], other: Any) -> Tensor:
        """``self op= other``: the values change in place (shared with `detach` views)."""
        recording = _state["grad"] or _state["trace"] is not None
        if self._graph is not None and self.is_leaf and recording:
            raise RuntimeError("a leaf that requires grad can be changed in place only inside "
                               "`with no_grad():` (and not in a function being frozen)")
        if self._graph is not None and not self.is_leaf and not recording:
            raise RuntimeError("a recorded result cannot be changed in place inside no_grad(); "
                               "detach() it first")
        result = operator(self, other)  # recorded like `self = self op other`
        if result.shape != self.shape:
            raise ShapeError(f"cannot update a tensor of shape {self.shape} in place with one "
                             f"of shape {_data(other).shape}")
        self._value[...] = result._value
        self._version += 1
        if result._graph is not None:  # a recorded operand: this tensor joins the graph
            self._graph, self._leaves, self.requires_grad = result._graph, result._leaves, True
        return self

    def __iadd__(self, other): return self._inplace(Tensor.__add__, other)
    def __isub__(self, other): return self._inplace(Tensor.__sub__, other)
    def __imul__(self, other): return self._inplace(Tensor.__mul__, other)
    def __itruediv__(self, other): return self._inplace(Tensor.__truediv__, other)

    def zero_(self) -> Tensor:
        return self._inplace(lambda t, _: Tensor(np.zeros(t.shape)), None)  # nan * 0 is nan


def tensor(data: Any, requires_grad: bool = False, name: str | None = None) -> Tensor:
    """A new leaf holding a float64 copy of `data`; `name` labels it in diagrams."""
    t = Tensor(_data(data.detach() if isinstance(data, Tensor) else data).copy(), name=name)
    return t.requires_grad_() if requires_grad else t


def _data(value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return value._value
    if isinstance(value, sym.Tensor):
        raise TypeError("a symbolic tensor has no value; use symgraph.static for those")
    return real_array(value, "a tensor's data")


def _as(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(_data(value))


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul of 1-d and 2-d values, with the symbolic matmul's message for shapes that do
    not fit (not NumPy's gufunc signature text)."""
    if not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
        raise ShapeError(f"matmul takes 1-d or 2-d tensors, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[0]:
        raise ShapeError(f"matmul shapes {a.shape} and {b.shape} do not match "
                         f"({a.shape[-1]} != {b.shape[0]})")
    # np.dot is np.matmul for 1-d and 2-d operands, but always BLAS: matmul's own loop took
    # 114 ms for a (10^6, 4) @ (4, 8) product that dot does in 8 ms (NumPy 2.4)
    return np.dot(a, b)


def _op(numeric: Callable[..., Any], build: Callable[..., sym.Tensor], *operands) -> Tensor:
    """The value now, with NumPy; the graph too if an operand is recorded (and recording is on)."""
    numbers = [not isinstance(o, Tensor) for o in operands]  # Python numbers: constants
    tensors = [_as(o) for o in operands]
    with np.errstate(all="ignore"):
        try:
            value = np.asarray(numeric(*[t._value for t in tensors]), dtype=np.float64)
            # never a view nor an operand itself: in-place updates must not reach other
            # tensors' values (a fresh result is kept as it is: copying a 10^6-row one was
            # a quarter of a dynamic MLP step)
            if value.base is not None or any(value is t._value for t in tensors):
                value = value.copy()
        except ShapeError:
            raise
        except ValueError as error:
            raise ShapeError(f"shapes {', '.join(str(t.shape) for t in tensors)}: "
                             f"{error}") from None
    recording = _state["grad"] or _state["trace"] is not None
    if not recording or all(t._graph is None for t in tensors):
        return Tensor(value)
    tracing = _state["trace"] is not None  # freeze: plain tensors are constants of the trace
    graphs = [t._graph if t._graph is not None else
              sym.constant(t._value, t.name) if number or tracing else _data_of(t)
              for t, number in zip(tensors, numbers)]
    leaves: dict[int, tuple[Tensor, int]] = {}
    for t, number in zip(tensors, numbers):
        if t._graph is None and not number and not tracing:
            pairs = ((t, t._version),)  # a data tensor: backward reads its values
        else:
            pairs = ((t, t._version),) if t._graph is not None and t.is_leaf else t._leaves
        for leaf, seen in pairs:  # the oldest version seen, so staleness is never hidden
            leaves[id(leaf)] = (leaf, min(seen, leaves.get(id(leaf), (leaf, seen))[1]))
    return Tensor(value, build(*graphs), tuple(leaves.values()))


def _data_of(t: Tensor) -> sym.Tensor:
    if t._data_graph is None:
        t._data_graph = eager_backward.data_graph(t._value)
    return t._data_graph


def _elementwise(op: str, *operands) -> Tensor:
    spec = OPS[op]
    shapes = [_data(o).shape for o in operands]
    sym.broadcast_shape(shapes)  # our message, before NumPy's
    return _op(spec.evaluate, lambda *g: sym.elementwise(op, *g), *operands)


sym.install_methods(Tensor, lambda op: lambda self: _elementwise(op, self))


def __getattr__(name: str) -> Any:
    """Every op of the table as a function on tensors (``dynamic.tanh(t)``)."""
    if name in OPS:
        return lambda *operands: _elementwise(name, *operands)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SGD:
    """``p -= lr * buf`` with ``buf = momentum * buf + p.grad`` (PyTorch's SGD)."""

    def __init__(self, params: Sequence[Tensor], lr: float, momentum: float = 0.0) -> None:
        self.params, self.lr, self.momentum = list(params), float(lr), float(momentum)
        self._buffers: dict[int, np.ndarray] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        with no_grad():
            for p in self.params:
                if p._grad is None:
                    continue  # not reached by this backward, as in PyTorch
                g = p._grad._value
                if self.momentum:
                    buf = self._buffers.get(id(p))
                    g = self._buffers[id(p)] = g.copy() if buf is None else self.momentum * buf + g
                p -= self.lr * g
