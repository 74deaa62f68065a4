"""NumPy code run on symbols: NumPy's protocols on `Node`, and `SymbolicArray`.

With these hooks ``np.sin(x)`` of a node is ``sin(x)``, and NumPy functions of arrays of nodes
build expressions: `SymbolicArray` is an object ndarray of nodes whose ufuncs (``+``, ``**``,
``np.tanh``, ``@``...) go through the op table element by element, and whose reductions build
one n-ary node each: ``np.sum(x)`` of 10^4 elements is one ``add`` of 10^4 terms, ``W @ x`` one
sum of products per entry, never a chain. Slicing, reshapes and the rest are NumPy's own.
NumPy functions without a rule here run NumPy's implementation on the symbolic values, and
object arrays it returns come back as SymbolicArrays. Plain object arrays of nodes work too
(NumPy's object loops call ``x.sin()``, which nodes have), but only elementwise.

Importing this module installs the hooks on `Node` (the node module cannot import it: this
one needs `Node`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .node import Node, _as_node, apply, const
from .numpy_ufuncs import BUILDERS, METHOD_NAMES, builder

__all__ = ["SymbolicArray", "array_function", "array_ufunc", "dot", "matmul", "pack"]

_NOT_GIVEN = np._NoValue  # NumPy's "argument not given" marker


class SymbolicArray(np.ndarray):
    """An object ndarray of expression nodes that NumPy's functions build expressions on."""

    def __new__(cls, nodes: Any) -> SymbolicArray:
        return _objects(nodes).view(cls)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return array_function(func, types, args, kwargs)

    def __bool__(self):
        raise TypeError(_TRUTH_MESSAGE)

    def dot(self, other, out=None):
        return _store(out, dot(self, other))

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return _store(out, _mean(self, axis, keepdims=keepdims))

    def nodes(self) -> list[Node]:
        """The elements as nodes, in row-major order (numbers become constants)."""
        return [_as_node(v) for v in _objects(self).reshape(-1).tolist()]


_TRUTH_MESSAGE = (
    "the truth value of a symbolic array is unknown until it is evaluated; use np.where(cond, "
    "a, b) or symgraph.where for a branch, or symgraph.dynamic.freeze to trace a function "
    "that branches on values")


# -- conversion ---------------------------------------------------------------------------------


def _objects(value: Any) -> np.ndarray:
    """`value` as a plain object ndarray (a node is 0-d): no protocol dispatch on it."""
    if isinstance(value, np.ndarray):
        plain = value.view(np.ndarray) if type(value) is not np.ndarray else value
        return plain if plain.dtype == object else plain.astype(object)
    if isinstance(value, Node):
        out = np.empty((), dtype=object)
        out[()] = value
        return out
    return np.asarray(value, dtype=object)


def pack(values: Sequence, shape: tuple[int, ...]) -> Any:
    """Elements in row-major order as a SymbolicArray of `shape` (a 0-d shape: the element)."""
    if shape == ():
        return values[0]
    out = np.empty(len(values), dtype=object)
    out[:] = values  # element by element: a node is no sequence, NumPy never looks inside
    return out.reshape(shape).view(SymbolicArray)


def _wrap(result: Any) -> Any:
    """NumPy's result of symbolic values: object arrays become SymbolicArrays, 0-d ones their
    element; tuples and lists (np.split, np.meshgrid) element by element."""
    if isinstance(result, np.ndarray) and result.dtype == object:
        return result[()] if result.ndim == 0 else result.view(SymbolicArray)
    if isinstance(result, (tuple, list)):
        return type(result)(_wrap(r) for r in result)
    return result


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (Node, int, float, np.generic))


def _store(out: Any, result: Any) -> Any:
    """Write `result` into NumPy's `out=` array(s), or return it when there are none."""
    if out is None:
        return result
    target = out[0] if isinstance(out, tuple) else out
    if len(out if isinstance(out, tuple) else (out,)) != 1:
        raise TypeError("symbolic ufuncs have one output")
    if not (isinstance(target, np.ndarray) and target.dtype == object):
        raise TypeError("cannot store symbolic values in a numeric array: make it with "
                        "dtype=object (np.zeros_like(x) of a symbolic x is one)")
    target[...] = _objects(result)
    return target


# -- ufuncs -------------------------------------------------------------------------------------


def elementwise(build: Callable[..., Node], inputs: Sequence) -> Any:
    """`build` on the broadcast elements of `inputs`: a node for scalars, else an array."""
    if all(_is_scalar(a) for a in inputs):
        return build(*inputs)
    arrays = np.broadcast_arrays(*[_objects(a) for a in inputs])
    columns = [a.reshape(-1).tolist() for a in arrays]
    values = [build(*args) for args in zip(*columns)]
    return pack(values, arrays[0].shape) if arrays[0].shape else values[0]


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """NumPy's `__array_ufunc__` for nodes and symbolic arrays."""
    out = kwargs.pop("out", None)
    if kwargs.pop("where", True) is not True:
        raise TypeError(f"np.{ufunc.__name__}(..., where=mask) is not supported on symbolic "
                        "values; use np.where(mask, np.{ufunc.__name__}(...), other)")
    for ignored in ("dtype", "casting", "order", "subok", "signature"):
        kwargs.pop(ignored, None)
    name = ufunc.__name__
    if method == "__call__":
        if name == "matmul":
            result = matmul(*inputs)
        elif name == "vecdot":
            result = reduce(np.add, elementwise(BUILDERS["multiply"], inputs), axis=-1)
        else:
            result = elementwise(builder(ufunc), inputs)
    elif method == "reduce":
        result = reduce(ufunc, inputs[0], **kwargs)
    elif method == "accumulate":
        result = accumulate(ufunc, inputs[0], **kwargs)
    elif method == "outer":
        a, b = (_objects(v) for v in inputs)
        result = elementwise(builder(ufunc), [a.reshape(a.shape + (1,) * b.ndim), b])
    else:
        raise TypeError(f"np.{name}.{method} is not supported on symbolic values")
    return _store(out, result)


def _balanced(build: Callable[..., Node], terms: list) -> Node:
    # A tree, not a chain: depth log2(n) for max/min of many elements.
    while len(terms) > 1:
        paired = [build(terms[i], terms[i + 1]) for i in range(0, len(terms) - 1, 2)]
        terms = paired + terms[-1:] if len(terms) % 2 else paired
    return _as_node(terms[0])


def _fold(ufunc: np.ufunc, terms: list) -> Node:
    name = ufunc.__name__
    if not terms:
        if name == "add":
            return const(0.0)
        if name == "multiply":
            return const(1.0)
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if name == "add":
        return apply("add", *terms)  # one n-ary node
    if name == "multiply":
        return apply("mul", *terms)
    build = builder(ufunc)
    if name in ("maximum", "minimum", "logical_and", "logical_or"):
        return _balanced(build, terms)
    result = terms[0]
    for term in terms[1:]:
        result = build(result, term)
    return _as_node(result)


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    normal = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise np.exceptions.AxisError(a, ndim)
        normal.append(int(a) % max(ndim, 1))
    return tuple(normal) if ndim else ()


def reduce(ufunc: np.ufunc, array: Any, axis: Any = 0, keepdims: bool = False,
           initial: Any = _NOT_GIVEN, **ignored) -> Any:
    """``ufunc.reduce``: one n-ary sum (product) per result, a balanced tree for max/min."""
    a = _objects(array)
    axes = _axes(axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    width = math.prod(a.shape[d] for d in axes)
    shape = tuple(a.shape[d] for d in kept)
    rows = a.transpose(kept + list(axes)).reshape(math.prod(shape), width)
    extra = [] if initial is _NOT_GIVEN or initial is None else [initial]
    values = [_fold(ufunc, row + extra) for row in rows.tolist()]
    if keepdims:
        shape = tuple(1 if d in axes else n for d, n in enumerate(a.shape))
    return pack(values, shape)


def accumulate(ufunc: np.ufunc, array: Any, axis: int = 0, **ignored) -> Any:
    """``ufunc.accumulate`` (np.cumsum, np.cumprod): running results along `axis`."""
    a = _objects(array)
    if a.ndim == 0:
        raise ValueError("cannot accumulate on a scalar")
    build = builder(ufunc)
    moved = np.moveaxis(a, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1]).tolist()
    out = []
    for row in rows:
        running = []
        for term in row:
            running.append(_as_node(term) if not running else build(running[-1], term))
        out.append(running)
    result = np.empty(moved.shape, dtype=object)
    result.reshape(-1)[:] = [v for row in out for v in row]
    return np.moveaxis(result, -1, axis).view(SymbolicArray)


# -- products -----------------------------------------------------------------------------------


def _dot_terms(row: list, column: list) -> Node:
    if len(row) == 1:
        return apply("mul", row[0], column[0])
    if not row:
        return const(0.0)
    return apply("add", *[apply("pow", x, 2.0) if x is y else apply("mul", x, y)
                          for x, y in zip(row, column)])


def _product_2d(a: np.ndarray, b: np.ndarray) -> list[Node]:
    rows, columns = a.tolist(), b.T.tolist()
    return [_dot_terms(r, c) for r in rows for c in columns]


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` (NumPy's rules, stacks of matrices included): a sum of products per entry."""
    A, B = _objects(a), _objects(b)
    if A.ndim == 0 or B.ndim == 0:
        raise ValueError("matmul: an operand is a scalar; use * for scalars")
    a2 = A[None, :] if A.ndim == 1 else A
    b2 = B[:, None] if B.ndim == 1 else B
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: shapes {A.shape} and {B.shape} do not match "
                         f"({a2.shape[-1]} != {b2.shape[-2]})")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    n, k, m = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    a3 = np.broadcast_to(a2, batch + (n, k)).reshape(-1, n, k)
    b3 = np.broadcast_to(b2, batch + (k, m)).reshape(-1, k, m)
    values = [v for i in range(a3.shape[0]) for v in _product_2d(a3[i], b3[i])]
    shape = batch + (n,) * (A.ndim > 1) + (m,) * (B.ndim > 1)
    return pack(values, shape)


def dot(a: Any, b: Any) -> Any:
    """``np.dot``: products for scalars, matmul for 1-d and 2-d, NumPy's N-d contraction."""
    A, B = _objects(a), _objects(b)
    if A.ndim == 0 or B.ndim == 0:
        return elementwise(BUILDERS["multiply"], [a, b])
    if A.ndim <= 2 and B.ndim <= 2:
        return matmul(A, B)
    k = A.shape[-1]
    columns = np.moveaxis(B, -2, 0) if B.ndim > 1 else B
    if columns.shape[0] != k:
        raise ValueError(f"shapes {A.shape} and {B.shape} not aligned")
    values = _product_2d(A.reshape(-1, k), columns.reshape(k, -1))
    return pack(values, A.shape[:-1] + B.shape[:-2] + B.shape[-1:])


def _inner(a: Any, b: Any) -> Any:
    A, B = _objects(a), _objects(b)
    if A.ndim == 0 or B.ndim == 0:
        return elementwise(BUILDERS["multiply"], [a, b])
    k = A.shape[-1]
    values = _product_2d(A.reshape(-1, k), B.reshape(-1, k).T)
    return pack(values, A.shape[:-1] + B.shape[:-1])


def _vdot(a: Any, b: Any) -> Node:
    return _dot_terms(_objects(a).reshape(-1).tolist(), _objects(b).reshape(-1).tolist())


def _outer(a: Any, b: Any, out: Any = None) -> Any:
    A, B = _objects(a).reshape(-1, 1), _objects(b).reshape(1, -1)
    return _store(out, elementwise(BUILDERS["multiply"], [A, B]))


# -- NumPy functions with rules of their own ------------------------------------------------------


def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
          **ignored) -> Any:
    objects = _objects(a)
    count = math.prod(objects.shape[d] for d in _axes(axis, objects.ndim))
    total = reduce(np.add, objects, axis=axis, keepdims=keepdims)
    return _store(out, elementwise(BUILDERS["divide"], [total, float(count)]))


def _where(condition: Any, x: Any = _NOT_GIVEN, y: Any = _NOT_GIVEN) -> Any:
    if x is _NOT_GIVEN or y is _NOT_GIVEN:
        raise TypeError("np.where(condition) (the indices where it holds) needs numbers; "
                        "np.where(condition, a, b) builds an expression")
    return elementwise(BUILDERS["where"], [condition, x, y])


def _clip(a: Any, a_min: Any = _NOT_GIVEN, a_max: Any = _NOT_GIVEN, out: Any = None,
          **kwargs) -> Any:
    low = kwargs.pop("min", None) if a_min is _NOT_GIVEN else a_min
    high = kwargs.pop("max", None) if a_max is _NOT_GIVEN else a_max
    if low is None and high is None:
        return a
    arguments = [a] + [v for v in (low, high) if v is not None]

    def build(x, *bounds):
        bounds = list(bounds)
        return BUILDERS["clip"](x, bounds.pop(0) if low is not None else None,
                                bounds.pop(0) if high is not None else None)

    return _store(out, elementwise(build, arguments))


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    a = _objects(x)
    vector = axis is not None and not isinstance(axis, tuple) or a.ndim == 1
    if ord in (None, "fro") or (ord == 2 and vector):
        squares = elementwise(lambda v: apply("pow", v, 2.0), [a])
        total = reduce(np.add, squares, axis=axis, keepdims=keepdims)
        return elementwise(BUILDERS["sqrt"], [total])
    if vector and ord == 1:
        return reduce(np.add, elementwise(BUILDERS["abs"], [a]), axis=axis, keepdims=keepdims)
    if vector and ord == math.inf:
        return reduce(np.maximum, elementwise(BUILDERS["abs"], [a]), axis=axis,
                      keepdims=keepdims)
    raise TypeError(f"np.linalg.norm(..., ord={ord!r}) is not supported on symbolic values; "
                    "spell it with np.sum, np.abs and np.sqrt")


def _matmul_function(a, b, out=None, **kwargs):
    return _store(out, matmul(a, b))


def _dot_function(a, b, out=None):
    return _store(out, dot(a, b))


_HANDLERS: dict[Callable, Callable] = {
    np.mean: _mean, np.where: _where, np.clip: _clip, np.dot: _dot_function, np.vdot: _vdot,
    np.inner: _inner, np.outer: _outer, np.linalg.norm: _norm,
}
if not isinstance(np.matmul, np.ufunc):  # a function before NumPy 2
    _HANDLERS[np.matmul] = _matmul_function


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """NumPy's `__array_function__` for nodes and symbolic arrays."""
    handler = _HANDLERS.get(func)
    if handler is not None:
        return handler(*args, **kwargs)
    return _wrap(func._implementation(*args, **kwargs))


# -- hooks on Node ------------------------------------------------------------------------------


def _node_array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return array_ufunc(ufunc, method, inputs, kwargs)


def _node_array_function(self, func, types, args, kwargs):
    return array_function(func, types, args, kwargs)


def _method(name: str) -> Callable[..., Node]:
    build = BUILDERS[name]

    def method(self, *others):
        return build(self, *others)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``np.{name}`` of this node (NumPy's object loops call it)."
    return method


def _install() -> None:
    Node.__array_ufunc__ = _node_array_ufunc
    Node.__array_function__ = _node_array_function
    # math.floor / math.ceil / math.trunc call these, so they build nodes too.
    Node.__floor__ = _method("floor")
    Node.__ceil__ = _method("ceil")
    Node.__trunc__ = _method("trunc")
    for name in METHOD_NAMES:
        if not hasattr(Node, name):
            setattr(Node, name, _method(name))


_install()
