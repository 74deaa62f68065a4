"""Small arrays of expression nodes with NumPy broadcasting, expanded to scalar nodes.

A `Tensor` is an object array of `Node`s, with the kind of tensor-level operation that made it
and an optional name (for messages and reprs). Every operation is expanded element by element
into ordinary scalar nodes through `graph.apply`, so interning, CSE, differentiation and kernels
work on them unchanged:

    >>> W, x = symbolic("W", (2, 3)), symbolic("x", (3,))
    >>> y = (W @ x + 1.0).tanh()          # a (2,) Tensor of scalar nodes

NumPy's functions work on tensors as on symbolic arrays (``np.tanh(W @ x)``, ``np.sum``).
Shapes are small (a few features, a few dozen points): the expansion is the point, not speed.
Sums are one n-ary ``add`` node, so a reduction is a single step in the generated code.

A *batched* tensor (``batched=True``: a static placeholder with a ``None`` first dimension, and
what is computed from it) holds the nodes of one row; its full shape is ``(None, *shape)``.
Elementwise operations broadcast it against unbatched tensors as NumPy would against the full
shape, so the rows are never expanded: graphs.batch reduces them over the batch axis as a loop.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..frontends.values import real_array
from ..ir.node import Node, _as_node, apply, const, symbol
from ..ir.numpy_arrays import SymbolicArray, array_function, array_ufunc
from ..ir.ops import OPS, having

ShapeLike = Sequence[int] | int


class ShapeError(ValueError):
    """Shapes that do not broadcast, multiply or reshape."""


class Tensor:
    """An n-d array of scalar nodes; `op` says what made it (``placeholder``, ``mul``...)."""

    __slots__ = ("nodes", "op", "name", "batched", "__weakref__")
    # NumPy's functions build tensors too: np.tanh(W @ x + b), np.sum(t), np.where(t > 0, t, 0).
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _refuse_batched(inputs, f"NumPy's {ufunc.__name__}")
        result = array_ufunc(ufunc, method, tuple(_unwrap(i) for i in inputs), kwargs)
        return _rewrap(result, _LABELS.get(ufunc.__name__, ufunc.__name__))

    def __array_function__(self, func, types, args, kwargs):
        _refuse_batched(args, f"NumPy's {func.__name__}")
        result = array_function(func, types, tuple(_unwrap(a) for a in args),
                                {k: _unwrap(v) for k, v in kwargs.items()})
        return _rewrap(result, func.__name__)

    def __init__(self, nodes: np.ndarray, op: str = "constant", name: str | None = None,
                 batched: bool = False) -> None:
        self.nodes = nodes
        self.op = op
        self.name = name
        self.batched = batched

    # -- queries --------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.nodes.shape

    @property
    def ndim(self) -> int:
        return self.nodes.ndim

    @property
    def size(self) -> int:
        return self.nodes.size

    def flat_nodes(self) -> list[Node]:
        """The scalar nodes in row-major order (the layout of kernel inputs and outputs)."""
        return list(self.nodes.flat)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __bool__(self):
        raise TypeError("the truth value of a symbolic tensor is unknown until it is run; "
                        "use where(cond, a, b) for a branch inside the graph")

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        shape = (None, *self.shape) if self.batched else self.shape
        return f"<Tensor{label} {self.op} shape={shape}>"

    # -- elementwise operators ------------------------------------------------------------------
    def __add__(self, other): return elementwise("add", self, other)
    def __radd__(self, other): return elementwise("add", other, self)
    def __sub__(self, other): return _map(_subtract, "sub", self, other)
    def __rsub__(self, other): return _map(_subtract, "sub", other, self)
    def __mul__(self, other): return elementwise("mul", self, other)
    def __rmul__(self, other): return elementwise("mul", other, self)
    def __truediv__(self, other): return elementwise("div", self, other)
    def __rtruediv__(self, other): return elementwise("div", other, self)
    def __pow__(self, other): return elementwise("pow", self, other)
    def __rpow__(self, other): return elementwise("pow", other, self)
    def __neg__(self): return elementwise("neg", self)
    def __pos__(self): return self
    def __abs__(self): return elementwise("abs", self)
    def __lt__(self, other): return elementwise("lt", self, other)
    def __le__(self, other): return elementwise("le", self, other)
    def __gt__(self, other): return elementwise("gt", self, other)
    def __ge__(self, other): return elementwise("ge", self, other)
    def __matmul__(self, other): return matmul(self, other)
    def __rmatmul__(self, other): return matmul(other, self)
    # == stays identity: tensors are dict keys (feed_dict), like nodes.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def call(self, op: str, *others) -> Tensor:
        """Any op of the table, elementwise: ``t.call("atan2", u)``."""
        return elementwise(op, self, *others)

    def pow(self, exponent) -> Tensor: return elementwise("pow", self, exponent)
    def square(self) -> Tensor: return _map(lambda a: apply("pow", a, 2.0), "square", self)
    # t.exp(), t.tanh(), ...: one method per op with the table's `method` trait (see below)

    # -- reductions and shapes ------------------------------------------------------------------
    def sum(self, axis: int | None = None) -> Tensor: return reduce_sum(self, axis)
    def mean(self, axis: int | None = None) -> Tensor: return reduce_mean(self, axis)

    def reshape(self, *shape) -> Tensor:
        _refuse_batched([self], "reshape")
        target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        try:
            nodes = self.nodes.reshape(target)
        except ValueError:
            raise ShapeError(f"cannot reshape a tensor of shape {self.shape} into "
                             f"{tuple(target)}") from None
        return Tensor(nodes, "reshape")

    def flatten(self) -> Tensor:
        return self.reshape(-1)

    @property
    def T(self) -> Tensor:
        _refuse_batched([self], "transpose")
        return Tensor(self.nodes.T, "transpose")

    def __getitem__(self, index) -> Tensor:
        _refuse_batched([self], "indexing")
        picked = self.nodes[index]
        if isinstance(picked, Node):
            picked = _array([picked], ())
        return Tensor(picked, "index")


def _refuse_batched(values: Any, what: str) -> None:
    if any(isinstance(v, Tensor) and v.batched for v in values):
        raise ShapeError(f"{what} is not supported on a tensor with a None (batch) dimension; "
                         "elementwise operations, matmul by a variable and reduce_sum/mean are")


# -- NumPy's protocols ----------------------------------------------------------------------------

_LABELS = {"subtract": "sub", "multiply": "mul", "divide": "div", "power": "pow",
           "negative": "neg", "absolute": "abs"}


def _unwrap(value: Any) -> Any:
    """Tensors (also in lists, as np.stack takes them) as symbolic arrays of their nodes."""
    if isinstance(value, Tensor):
        return value.nodes.view(SymbolicArray)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    return value


def _rewrap(result: Any, label: str) -> Any:
    if isinstance(result, Node):
        return Tensor(_array([result], ()), label)
    if isinstance(result, np.ndarray) and result.dtype == object:
        return Tensor(_array([_as_node(v) for v in result.flat], result.shape), label)
    if isinstance(result, (list, tuple)):
        return type(result)(_rewrap(r, label) for r in result)
    return result


# -- construction ---------------------------------------------------------------------------------


def _array(nodes: Iterable[Node], shape: tuple[int, ...]) -> np.ndarray:
    flat = list(nodes)
    out = np.empty(len(flat), dtype=object)
    out[:] = flat  # element by element: Node is not a sequence, so NumPy never looks inside
    return out.reshape(shape)


def element_names(name: str, shape: tuple[int, ...]) -> list[str]:
    """``W`` for a scalar, ``W[0]``, ``W[1]``... or ``W[0,1]`` for the elements of an array."""
    if not shape:
        return [name]
    return [f"{name}[{','.join(map(str, i))}]" for i in np.ndindex(*shape)]


def symbolic(name: str, shape: ShapeLike = (), op: str = "input") -> Tensor:
    """A tensor of fresh symbols named after `name` and the element index."""
    shape = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ShapeError(f"a shape has no negative sizes, got {shape}")
    _check_fits(name, shape)
    nodes = _array((symbol(n) for n in element_names(name, shape)), shape)
    return Tensor(nodes, op, name)


# What one symbol of an unrolled tensor costs, with the graph built on it (measured: a
# (60000, 784) placeholder reached 3.8 GB, ~80 bytes a symbol before any operation).
BYTES_PER_ELEMENT = 1000


def _available_memory() -> int:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on this platform: no refusal
        return 1 << 62


def _check_fits(name: str, shape: tuple[int, ...]) -> None:
    """Refuse a tensor of symbols whose graph cannot fit in memory, before building it."""
    size = math.prod(shape)
    if size * BYTES_PER_ELEMENT > _available_memory():
        raise ShapeError(
            f"{name!r} of shape {shape} would be {size:,} scalar nodes (about "
            f"{size * BYTES_PER_ELEMENT / 1e9:.0f} GB with its graph), more than this machine's "
            f"free memory ({_available_memory() / 1e9:.1f} GB); a fixed shape is unrolled into "
            "one node per element. Give the rows' dimension as None (placeholder(tf.float32, "
            "(None, ...))): a None batch dimension is a loop over the fed rows, not unrolled")


def constant(value: Any, name: str | None = None) -> Tensor:
    """A tensor of constant nodes holding the numbers of `value` (array-like, float64)."""
    data = real_array(value, "a constant's value")
    return Tensor(_array((const(v) for v in data.flat), data.shape), "constant", name)


def as_tensor(value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, Node):
        return Tensor(_array([value], ()), "expression")
    return constant(value)


# -- elementwise ----------------------------------------------------------------------------------


def broadcast_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError("shapes " + ", ".join(map(str, shapes)) +
                         " do not broadcast together") from None


def _map(build: Callable[..., Node], label: str, *operands) -> Tensor:
    """Apply `build` to the broadcast elements of the operands."""
    tensors = tuple(as_tensor(o) for o in operands)
    batched = any(t.batched for t in tensors)
    if batched:
        tensors = _row_operands(tensors)
    shape = broadcast_shape([t.shape for t in tensors])
    columns = [np.broadcast_to(t.nodes, shape).flat for t in tensors]
    return Tensor(_array((build(*args) for args in zip(*columns)), shape), label,
                  batched=batched)


def _row_operands(tensors: Sequence[Tensor]) -> list[Tensor]:
    """Operands of an elementwise operation on batched tensors, as rows: NumPy's broadcast
    against the full shape (None, *row), where an unbatched dimension facing the batch axis
    must be 1 (it is dropped) and a batch axis must face a batch axis."""
    rank = max(t.ndim for t in tensors if t.batched)
    full = ", ".join(str((None, *t.shape) if t.batched else t.shape) for t in tensors)
    rows = []
    for t in tensors:
        if t.batched and t.ndim != rank or not t.batched and t.ndim > rank + 1:
            raise ShapeError(f"shapes {full} do not broadcast with the batch (None) dimension "
                             "first in each")
        if not t.batched and t.ndim == rank + 1:
            if t.shape[0] != 1:
                raise ShapeError(f"shapes {full}: a dimension of size {t.shape[0]} faces the "
                                 "batch (None) dimension (only 1 broadcasts against it)")
            t = Tensor(t.nodes.reshape(t.shape[1:]), t.op, t.name)
        rows.append(t)
    return rows


def _subtract(a: Node, b: Node) -> Node:
    return a - b


def elementwise(op: str, *operands) -> Tensor:
    """An op of the table applied elementwise with NumPy broadcasting."""
    if op not in OPS:
        raise ValueError(f"unknown operation {op!r}")
    return _map(lambda *args: apply(op, *args), op, *operands)


def _function(name: str) -> Callable[..., Tensor]:
    def function(*operands) -> Tensor:
        return elementwise(name, *operands)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}`` of the op table, elementwise over tensors."
    return function


FUNCTIONS: dict[str, Callable[..., Tensor]] = {name: _function(name) for name in OPS}


def function_of(name: str) -> Callable[..., Tensor]:
    """The elementwise function of op `name` (registered ops included)."""
    known = FUNCTIONS.get(name)
    return known if known is not None else _function(name)


def install_methods(cls: type, make: Callable[[str], Callable]) -> None:
    """``t.exp()``... on `cls`: ``make(op)`` for each op with the table's `method` trait."""
    for name in having("method"):
        method = make(name)
        method.__name__, method.__qualname__ = name, f"{cls.__name__}.{name}"
        method.__doc__ = f"``{name}`` of the op table, elementwise."
        setattr(cls, name, method)


install_methods(Tensor, lambda op: lambda self: elementwise(op, self))


def where(condition, a, b) -> Tensor:
    return elementwise("where", condition, a, b)


# -- reductions and products ----------------------------------------------------------------------


def _total(nodes: Sequence[Node]) -> Node:
    return apply("add", *nodes) if len(nodes) else const(0.0)


def _reduce(t: Tensor, axis: int | None, label: str, finish: Callable[[Node, int], Node]
            ) -> Tensor:
    if t.batched:  # graphs.batch reduces over the rows (static_graph.reduce_sum/mean)
        raise ShapeError("a tensor with a None (batch) dimension is reduced with "
                         "reduce_sum/reduce_mean of symgraph.static")
    if axis is None:
        rows, shape = t.nodes.reshape(1, -1), ()
    else:
        if not -t.ndim <= axis < t.ndim:
            raise ShapeError(f"axis {axis} is out of range for a tensor of shape {t.shape}")
        moved = np.moveaxis(t.nodes, axis, -1)
        rows, shape = moved.reshape(-1, moved.shape[-1]), moved.shape[:-1]
    count = rows.shape[1]
    return Tensor(_array((finish(_total(list(row)), count) for row in rows), shape), label)


def reduce_sum(t: Any, axis: int | None = None) -> Tensor:
    """Sum of all elements (or along `axis`): one n-ary ``add`` node per result."""
    return _reduce(as_tensor(t), axis, "sum", lambda total, n: total)


def reduce_mean(t: Any, axis: int | None = None) -> Tensor:
    """Mean as sum / count, the way ``np.mean`` computes it."""
    t = as_tensor(t)
    if t.size == 0:
        raise ShapeError("the mean of an empty tensor is undefined")
    return _reduce(t, axis, "mean", lambda total, n: apply("div", total, float(n)))


def matmul(a: Any, b: Any) -> Tensor:
    """``a @ b`` for 1-d and 2-d tensors; each result is one sum of products."""
    a, b = as_tensor(a), as_tensor(b)
    if a.batched or b.batched:  # rows (None, k) times a (k, m) matrix: each row times it
        if b.batched or a.ndim != 1 or b.ndim != 2:
            raise ShapeError("matmul with a None (batch) dimension takes (None, k) @ (k, m), got "
                             f"{(None, *a.shape) if a.batched else a.shape} @ "
                             f"{(None, *b.shape) if b.batched else b.shape}")
        row = matmul(Tensor(a.nodes, a.op, a.name), b)
        row.batched = True
        return row
    if not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
        raise ShapeError(f"matmul takes 1-d or 2-d tensors, got shapes {a.shape} and {b.shape}")
    left = a.nodes.reshape(1, -1) if a.ndim == 1 else a.nodes
    right = b.nodes.reshape(-1, 1) if b.ndim == 1 else b.nodes
    if left.shape[1] != right.shape[0]:
        raise ShapeError(f"matmul shapes {a.shape} and {b.shape} do not match "
                         f"({left.shape[1]} != {right.shape[0]})")
    rows, inner, cols = left.shape[0], left.shape[1], right.shape[1]
    products = (_total([apply("mul", left[i, k], right[k, j]) for k in range(inner)])
                for i in range(rows) for j in range(cols))
    shape = (rows,) * (a.ndim == 2) + (cols,) * (b.ndim == 2)
    return Tensor(_array(products, shape), "matmul")


def stack_nodes(values: Sequence[Node | float], shape: tuple[int, ...], label: str = "stack"
                ) -> Tensor:
    """A tensor from scalar nodes (or numbers) in row-major order."""
    return Tensor(_array((_as_node(v) for v in values), shape), label)
