"""The Python API: `compile` an expression into kernels for its value and derivatives.

    >>> import symgraph as sg
    >>> x, y = sg.symbols("x y")
    >>> fn = sg.compile(x**2 * y + sg.sin(y), [x, y])
    >>> value, gradient = fn.value_and_grad(3.0, 2.0)

Every derivative comes from one fused kernel (value and gradient in a single pass, sharing the
forward subexpressions). A point is floats, a 1-D array, or keywords by symbol name; a batch is
a 2-D array with one row per point, or one array per variable (by position or by name,
broadcast together like NumPy's operands): ``fn(xs, ys)`` is ``fn(np.column_stack([xs, ys]))``.
``fn.value_and_grad(x, y, out=g)`` writes the gradient into a preallocated array and returns
the value (for loops that call it millions of times); ``fn.value_and_grad_floats(x, y)``
returns ``(value, (gx, gy))``, floats only: the fastest 1-point call (runtime.points).

At one point, a Numba module's own ``NAME_api`` function (backends.numba.point) is what the
methods are: numbers or one float64 array go straight into the compiled ``NAME_point``; it
hands everything else to the checked path here. This module is the calling side (the fast
paths between a caller and a kernel); building the kernels (cache lookup, programs for the
products asked for, strategy, module or tapes) is `runtime.build`'s, and what a backend's
kernels can do is its record's (`backends.registry`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .backends.numba.cache import entry_point, resolve
from .backends.registry import STRAIGHT, backend_named
from .frontends.coerce import _names, as_expression, as_symbols, check_not_constants
from .frontends.traced import compile_function
from .frontends.values import real_array
from .ir.node import Node
from .ir.printer import to_latex, to_text
from .ir.regroup import has_wide_terms, join_sums
from .lower.products import VALUE, VALUE_GRAD, VALUE_GRAD_HESS, VALUE_JAC, Product, products_for
from .runtime import outputs
from .runtime.build import build
from .runtime.checked import checked_batch, checked_row, fill_gradient
from .runtime.interpret import Pending
from .runtime.points import PointEntries, checked_floats
from .runtime.reduction import compile_reduced
from .runtime.separable import fused_min_terms, separable_sum
from .runtime.separable_build import SeparableBuild, fused_products
from .runtime.sparse import DerivativeKernels

_F64 = np.dtype(np.float64)
# Numbers whose float() is the float64 NumPy makes of them (Python's and NumPy's real scalars)
_NUMBERS = frozenset({float, int, bool, np.float64, np.float32, np.float16, np.bool_} | {
    getattr(np, f"{sign}int{bits}") for sign in ("", "u") for bits in (8, 16, 32, 64)})
_VALUE, _OUT, _VALUE_GRAD, _GRAD = range(4)  # what a bound call returns


def _finish(out: np.ndarray, kind: int) -> Any:
    if kind == _VALUE_GRAD:
        return out.item(0), out[1:]
    if kind == _GRAD:
        return out[1:]
    return out.item(0) if kind == _VALUE else out


def _finish_batch(out: np.ndarray, kind: int) -> Any:
    if kind == _VALUE_GRAD:
        return out[:, 0], out[:, 1:]
    if kind == _GRAD:
        return out[:, 1:]
    return out[:, 0] if kind == _VALUE else out


class _Row:
    """A row kernel called the cheapest safe way: a Numba kernel's compiled entry point for
    C-contiguous float64 arrays (the one signature the API uses), which skips the dispatcher's
    type resolution; there at once when the kernel came from the cache, else compiled on the
    first call. Callers pass only 1-D float64 C-contiguous aligned arrays of the right sizes,
    `out` writeable."""

    __slots__ = ("call", "kernel")

    def __init__(self, kernel: Callable[[np.ndarray, np.ndarray], None]) -> None:
        self.kernel = kernel
        pending = getattr(kernel, "__self__", None)
        if isinstance(pending, Pending):  # interpreted first (runtime.interpret)
            self.call = pending.bind_row(self, _ROW_TYPES, resolve)
        else:
            self.call = entry_point(kernel, _ROW_TYPES) or self._first

    def _first(self, x: np.ndarray, out: np.ndarray) -> None:
        self.call = resolve(self.kernel, _ROW_TYPES)
        self.call(x, out)


_ROW_TYPES = (np.empty(0), np.empty(0))  # stand-ins for (x, out): 1-D float64, C order


def _columns(values: tuple, names: list[str]) -> np.ndarray:
    """Per-variable values (numbers or arrays, broadcast together) as a batch: one column per
    variable, in order."""
    if len(values) != len(names):
        raise ValueError(f"expected {len(names)} value(s), one per variable {names}, got "
                         f"{len(values)}")
    arrays = [real_array(v, f"the value of {n!r}") for v, n in zip(values, names)]
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        shapes = ", ".join(f"{n}: {a.shape}" for n, a in zip(names, arrays))
        raise ValueError(f"the variables' arrays do not broadcast together ({shapes})") from None
    return np.stack(arrays, axis=-1)


class CompiledFunction:
    """Kernels for an expression (or a vector of them) and its derivatives w.r.t. `wrt`.

    ``fn(*point)`` gives the value; ``grad``, ``value_and_grad``, ``jacobian`` and ``hessian``
    the derivatives. ``source`` is the generated module's text and ``path`` its file.
    """

    def __init__(self, expr: Any, args: Any = None, *, wrt: Any = None, backend: str = "numba",
                 hessian: bool = False, cache_dir: str | os.PathLike | None = None,
                 strategy: str = "auto") -> None:
        record = backend_named(backend)
        self.scalar = not isinstance(expr, (list, tuple))
        declared = [*_names(args), *_names(wrt)]  # a text's E is a variable if it is an argument
        self.outputs = [as_expression(e, declared) for e in ([expr] if self.scalar else expr)]
        if not self.outputs:
            raise ValueError("compile needs at least one expression; got an empty "
                             f"{type(expr).__name__}")
        self.args = as_symbols(args, self.outputs)
        self.wrt = self.args if wrt is None else as_symbols(wrt, self.outputs)
        check_not_constants(self.args, self.outputs, "an argument")
        arguments = set(self.args)  # nodes are interned: a set of them is a set of identities
        missing = [w.value for w in self.wrt if w not in arguments]
        if missing:
            raise ValueError(f"wrt names {missing}, which are not among the arguments")
        self.backend = backend
        self.cache_dir = cache_dir
        self.has_hessian = hessian and self.scalar
        # With nothing to differentiate by (wrt=[]) the derivative kernels would copy `value`.
        self.products = products_for(self.scalar, self.has_hessian, bool(self.wrt))
        self._built = built = self._fused(record, strategy) or build(
            self.outputs, self.args, self.wrt, backend=record, products=self.products,
            cache_dir=cache_dir, strategy=strategy)
        self.strategy = built.strategy
        self._n, self._m, self._k = len(self.args), len(self.outputs), len(self.wrt)
        self._rows = {name: _Row(kernel) for name, kernel in built.rows.items()}
        self._batches = built.threaded
        self._hessian_function: CompiledFunction | None = None
        self._derivative_kernels: DerivativeKernels | None = None
        # Interpreted first (runtime.interpret): the one-point functions are bound once the
        # switch has made the Numba module (Deferred.on_switch), never by asking for it here.
        module = built.module if built.made and self.strategy == STRAIGHT else None
        self._points = PointEntries(module, self._n, self._bind_all)
        self._bind_all()
        if not built.made:
            built.on_switch.append(self._bind_module)

    def _fused(self, record: Any, strategy: str) -> SeparableBuild | None:
        """A large sum of small terms (runtime.separable): value and gradient from its fused
        kernels, the symbolic kernels built only when asked for (strategy "auto" only)."""
        if (strategy != "auto" or not self.scalar or self.outputs[0].op != "add"
                or not fused_products(self.products)):
            return None
        head = self.outputs[0]
        if has_wide_terms(head):  # (only then the walk: a fused sum may have 10^5 terms)
            [head] = join_sums([head])  # (per-observation sums: their like terms collected)
        found = separable_sum(head, self.args, self.wrt, backend=record,
                              cache_dir=self.cache_dir, min_terms=fused_min_terms(head))
        if found is None:
            return None
        return SeparableBuild(found, self.products, strategy, lambda: build(
            self.outputs, self.args, self.wrt, backend=record, products=self.products,
            cache_dir=self.cache_dir, strategy=strategy))

    def _bind_module(self, module: Any) -> None:
        self._points = PointEntries(module, self._n, self._bind_all)
        self._bind_all()

    def _bind_all(self) -> None:
        """The per-instance fast paths (they shadow the methods of the same name): one
        function between the caller and the kernel, with everything it needs bound in
        advance; the module's own ``NAME_api`` where it has one (backends.numba.point)."""
        points = self._points.methods
        self._bound = getattr(self, "_bound", 0) + 1  # (a kept checked method sees it: points)
        [self._value] = points(VALUE.name, [self._bind(
            VALUE.name, self._m, _VALUE if self.scalar else _OUT)])
        if self.scalar:
            self.value_and_grad, self.grad = points(VALUE_GRAD.name, [
                self._bind(VALUE_GRAD.name, 1 + self._k, _VALUE_GRAD, "value_and_grad"),
                self._bind(VALUE_GRAD.name, 1 + self._k, _GRAD, "grad")])
            self.value_and_grad_floats = self._points.floats(VALUE_GRAD.name, checked_floats(
                self, [s.value for s in self.args], VALUE_GRAD.name),
                CompiledFunction.value_and_grad_floats.__doc__)

    @property
    def programs(self) -> list:
        """The kernels' straight-line programs (their steps' display comments once the
        module showing them is made)."""
        return self._built.programs

    @property
    def module(self) -> Any:
        """The generated module (made now if the first calls were interpreted)."""
        return self._built.module

    @property
    def path(self) -> Any:
        """The generated module's file (None on the tape)."""
        return self._built.path

    @property
    def source(self) -> str:
        """The generated module's text, or the tape printed as readable steps (on first use:
        a 10^5-step tape takes a while to print)."""
        return self._built.source

    @property
    def batch_tapes(self) -> Any:
        """The TapeModule running the batches of programs chosen for the tape's lanes (None if
        there are none); runtime.dask ships it beside the source."""
        return self._built.batch_tapes

    def kernels(self, name: str = "value_grad") -> tuple[Callable, Callable]:
        """The raw kernels behind the methods, for program `name` (``value``, ``value_grad``,
        ``value_jac``, ``value_grad_hess``): ``row(x, out)`` for one point and
        ``batch(X, OUT)`` for rows of points, writing into arrays you allocate (float64,
        C-contiguous, not overlapping; `OUT` has a column per output). The batch runs on the
        calling thread. Both check their arguments' shapes (ValueError); ``.unchecked`` on
        either is the kernel itself (compiled: asking for them ends interpreted first calls).
        """
        if name in ("sparse_jac", "sparse_hess", "hessp", "jvp", "vjp"):
            # Built on first use (runtime.sparse); hessp/jvp/vjp take the point as [x, v].
            built = self.derivative_kernels.kernel(name).built
            programs, rows, batches = built.programs, built.rows[name], built.batches[name]
        elif name not in self._rows:
            raise KeyError(f"no program {name!r}; there are {sorted(self._rows)} and "
                           "sparse_jac, sparse_hess, hessp, jvp, vjp")
        elif getattr(self._built, "separable", None) is not None:  # a fused sum's own
            rows, batches = self._built.rows[name], self._built.batches[name]
            n, m = len(self.args), self._built.width(name)
            return checked_row(rows, name, n, m), checked_batch(batches, name, n, m)
        else:  # (interpreted first: raw kernels are the compiled ones, made now)
            built = self._built.straight()
            programs, rows, batches = built.programs, built.rows[name], built.batches[name]
        program = next(p for p in programs if p.name == name)
        n, m = len(program.inputs), len(program.outputs)
        return checked_row(rows, name, n, m), checked_batch(batches, name, n, m)

    @property
    def derivative_kernels(self) -> DerivativeKernels:
        """Sparse derivatives and derivative products (runtime.sparse), each kernel built on
        first use."""
        if self._derivative_kernels is None:
            self._derivative_kernels = DerivativeKernels(
                self.outputs, self.args, self.wrt, backend=backend_named(self.backend),
                cache_dir=self.cache_dir, strategy=self.strategy)
        return self._derivative_kernels

    def hessp(self, x: Any, v: Any) -> np.ndarray:
        """Hessian of a scalar expression times `v`, without forming the Hessian (one fused
        forward-over-reverse kernel); rows of `x` and `v` are a batch."""
        self._require_scalar("hessp")
        return self.derivative_kernels.hessp(self._point((x,), {}), v)

    def jvp(self, x: Any, v: Any) -> np.ndarray:
        """Jacobian times `v` (the outputs' directional derivatives), one fused kernel."""
        return self.derivative_kernels.jvp(self._point((x,), {}), v)

    def vjp(self, x: Any, w: Any) -> np.ndarray:
        """`w` times the Jacobian (a gradient per weighting of the outputs), one kernel."""
        return self.derivative_kernels.vjp(self._point((x,), {}), w)

    # -- points -----------------------------------------------------------------------------
    def _point(self, values: tuple, named: dict) -> np.ndarray:
        if named:
            if values:
                raise TypeError("give the point either by position or by name, not both")
            missing = [s.value for s in self.args if s.value not in named]
            unknown = sorted(set(named) - {s.value for s in self.args})
            if missing or unknown:
                raise TypeError(f"point by name needs exactly {[s.value for s in self.args]}; "
                                f"missing {missing}, unknown {unknown}")
            values = tuple(named[s.value] for s in self.args)
        if all(type(v) in _NUMBERS for v in values):  # float() is NumPy's conversion
            point = [float(v) for v in values]
        elif (named or len(values) > 1) and any(np.ndim(v) > 0 for v in values):
            # One value (or array of values) per variable: the variables are the columns
            # of a batch, whatever the arrays' length (never rows read as points).
            point = _columns(values, [s.value for s in self.args])
        elif len(values) == 1 and np.ndim(values[0]) > 0:
            point = real_array(values[0], "the point")
        else:  # a number per variable (None, text or complex are refused, naming it)
            names = [s.value for s in self.args] + ["?"] * len(values)
            point = [real_array(v, f"the value of {n!r} (argument {i})")
                     for i, (v, n) in enumerate(zip(values, names))]
        array = np.ascontiguousarray(point, dtype=np.float64)
        if not array.flags.aligned:  # the row kernel's entry point takes aligned arrays
            array = array.copy()
        if array.ndim == 0 or array.ndim > 2 or array.shape[-1] != self._n:
            raise ValueError(f"expected {self._n} value(s) per point for "
                             f"{[s.value for s in self.args]}, got shape {np.shape(point)}")
        return array

    def _run(self, kernel: str, size: int, values: tuple, named: dict) -> np.ndarray:
        if kernel not in self._rows:  # no derivative kernels (wrt=[]): derivatives are empty
            kernel, size = VALUE.name, self._m
        x = self._point(values, named)
        if x.ndim == 1:
            out = np.empty(size)
            self._rows[kernel].call(x, out)
        else:
            out = outputs.empty((x.shape[0], size))  # recycled memory, for big batches
            self._batches[kernel](x, out)
        return out

    def _bind(self, kernel: str, size: int, kind: int, name: str = "__call__"
              ) -> Callable[..., Any]:
        """The method `name`: `kind` of result from `kernel` at a point or batch, with fast
        paths for the spellings the kernels take as they are: floats, or one float64 array
        (1-D for a point, 2-D for a batch; C-contiguous, aligned, writeable)."""
        if kernel not in self._rows:
            kernel, size = VALUE.name, self._m
        row, run, n, shape = self._rows[kernel], self._run, self._n, (self._n,)
        batch, batch_empty = self._batches[kernel], outputs.empty
        array, empty, ndarray, f64 = np.array, np.empty, np.ndarray, _F64
        # Numba's straight-line rows read every input before they write any output, so floats
        # can go in at the front of the array the results come back in (one allocation).
        shared = self._built.rows_in_place and (
            kind != _OUT or n <= size)  # a vector of outputs comes back as the whole array
        pad = (0.0,) * max(0, size - n)
        width = max(size, n) if shared else size
        tail = slice(1, size)  # the gradient
        values_grads, grads, value = kind == _VALUE_GRAD, kind == _GRAD, kind == _VALUE

        def slow(values: tuple, named: dict) -> Any:
            out = run(kernel, size, values, named)
            return _finish_batch(out, kind) if out.ndim == 2 else _finish(out, kind)

        def batched(x: Any) -> Any:
            """The results of a batch the kernel takes as it is, else None."""
            if (type(x) is ndarray and x.ndim == 2 and x.shape[1] == n and x.dtype is f64
                    and x.flags.carray):
                out = batch_empty((x.shape[0], size))  # a batch, as _run does it
                batch(x, out)
                return _finish_batch(out, kind)
            return None

        def into(values: tuple, named: dict, out: Any) -> Any:  # the gradient into `out`
            result = batched(values[0]) if len(values) == 1 and not named else None
            if result is None:
                result = slow(values, named)
            gradient = result if grads else result[1]
            fill_gradient(out, gradient, name, [s.value for s in self.args])
            return out if grads else result[0]

        def call(*values: Any, **named: Any) -> Any:
            if named and (values_grads or grads):
                out = named.pop("out", None)
                if out is not None:
                    return into(values, named, out)
            if named or not values:
                return slow(values, named)
            if len(values) == n and type(values[0]) is float:
                if n == 1 and shared:
                    out = empty(width)
                    out[0] = values[0]
                else:
                    # With the first a float, a conversion that succeeds gives the (n,) point.
                    try:
                        out = array(values + pad) if shared else array(values)
                    except (TypeError, ValueError):  # e.g. an array among them
                        return slow(values, named)
                    if out.dtype is not f64:  # e.g. a string among them
                        return slow(values, named)
                if shared:
                    row.call(out, out)
                else:
                    x, out = out, empty(size)
                    row.call(x, out)
            else:
                x = values[0]
                if not (type(x) is ndarray and x.shape == shape and x.dtype is f64
                        and x.flags.carray and len(values) == 1):
                    result = batched(x) if len(values) == 1 else None
                    return slow(values, named) if result is None else result
                out = empty(size)
                row.call(x, out)
            if values_grads:
                return out.item(0), out[tail]
            if grads:
                return out[tail]
            return out.item(0) if value else out

        call.__name__ = name
        call.__qualname__ = f"CompiledFunction.{name}"
        call.__doc__ = getattr(CompiledFunction, name).__doc__
        return call

    # -- evaluation ---------------------------------------------------------------------------
    def __call__(self, *values, **named):
        return self._value(*values, **named)

    def value_and_grad(self, *values, **named):
        """(value, gradient) of a scalar expression, from one fused kernel; with
        ``out=g`` (a writeable float64 array of the gradient's shape) the gradient fills `g`
        and only the value is returned."""
        self._require_scalar("value_and_grad")
        return self._bind(VALUE_GRAD.name, 1 + self._k, _VALUE_GRAD)(*values, **named)

    def value_and_grad_floats(self, *values: float) -> tuple[float, tuple[float, ...]]:
        """``(value, (g0, ..., g_{n-1}))`` of a scalar expression at the point given as one
        number per argument, all Python floats: the fastest 1-point call (with Numba, the
        compiled kernel's own CPython entry, no Python frame; no array is made). Floats
        and ints go in as they are, other real numbers (NumPy scalars, 0-d arrays) as
        ``value_and_grad`` reads them; a wrong count, text, None, complex, a masked value or
        an array is refused (TypeError naming the argument: ``value_and_grad`` takes arrays
        and batches)."""
        self._require_scalar("value_and_grad_floats")
        return self.value_and_grad_floats(*values)  # (bound per instance: runtime.points)

    def grad(self, *values, **named) -> np.ndarray:
        """The gradient of a scalar expression (from the fused value+gradient kernel); with
        ``out=g``, written into `g`, which is returned."""
        self._require_scalar("value_and_grad")
        return self._bind(VALUE_GRAD.name, 1 + self._k, _GRAD)(*values, **named)

    def jacobian(self, *values, sparse: bool = False, **named) -> np.ndarray:
        """Shape (outputs, inputs) at a point, (points, outputs, inputs) for a batch;
        `sparse`: a scipy.sparse.csr_array of the structural nonzeros (a list for a batch)."""
        if sparse:
            return self.derivative_kernels.jacobian(self._point(values, named))
        if self.scalar:
            g = self.grad(*values, **named)
            return g[..., None, :]
        return self._part(VALUE_JAC, values, named)

    def hessian(self, *values, sparse: bool = False, **named) -> np.ndarray:
        """Shape (inputs, inputs) at a point, (points, inputs, inputs) for a batch; `sparse`:
        the full symmetric scipy.sparse.csr_array of the structural nonzeros."""
        self._require_scalar("hessian")
        if sparse:
            return self.derivative_kernels.hessian(self._point(values, named))
        if not self.has_hessian:
            if self._hessian_function is None:  # built on first use, then kept
                self._hessian_function = CompiledFunction(
                    self.outputs[0], self.args, wrt=self.wrt, backend=self.backend,
                    hessian=True, cache_dir=self.cache_dir, strategy=self.strategy)
            return self._hessian_function.hessian(*values, **named)
        return self._part(VALUE_GRAD_HESS, values, named)

    def _part(self, product: Product, values: tuple, named: dict) -> np.ndarray:
        """`product`'s own part of its kernel's row (a Jacobian, a Hessian), shaped: per point,
        or per row of a batch."""
        out = self._run(product.name, product.width(self._m, self._k), values, named)
        start, shape = product.part(self._m, self._k)
        return out[..., start:].reshape(out.shape[:-1] + shape)

    def _require_scalar(self, what: str) -> None:
        if not self.scalar:
            raise TypeError(f"{what} needs a scalar expression; use jacobian for a vector")

    # -- inspection ---------------------------------------------------------------------------
    def op_counts(self, weighted: bool = False) -> dict[str, int]:
        """Arithmetic operations in each kernel (weighted by the op table's costs if asked):
        what value+derivatives cost against the value alone."""
        counts = getattr(self._built, "op_counts", None)  # a fused sum's: its kinds' programs
        if counts is not None:
            return counts(weighted)
        return {p.name: p.cost if weighted else p.op_count for p in self.programs}

    def __reduce__(self) -> tuple:
        """Pickled as what rebuilds it: the expressions as text (which parses back to the same
        nodes), the arguments' names and the options; the unpickling process compiles again
        (from its cache when it has the expression)."""
        texts = [to_text(o) for o in self.outputs]
        return (_rebuild, (texts[0] if self.scalar else texts, [a.value for a in self.args],
                           [w.value for w in self.wrt], self.backend, self.has_hessian,
                           self.cache_dir, self.strategy))

    def __repr__(self) -> str:
        names = ", ".join(a.value for a in self.args)
        where = self.path if self._built.made else (
            "fused sum kernels" if isinstance(self._built, SeparableBuild)
            else "interpreted first calls")
        return f"<CompiledFunction ({names}) -> {self._m} output(s), {self.backend}: {where}>"

    def _repr_latex_(self) -> str:
        return "$" + r",\quad ".join(to_latex(o) for o in self.outputs) + "$"

    def _repr_svg_(self) -> str | None:
        from .pictures.draw import to_svg  # Graphviz is optional: None lets Jupyter fall back

        return to_svg(self.outputs)


def _rebuild(expr: Any, args: list[str], wrt: list[str], backend: str, hessian: bool,
             cache_dir: Any, strategy: str) -> CompiledFunction:
    return CompiledFunction(expr, args, wrt=wrt, backend=backend, hessian=hessian,
                            cache_dir=cache_dir, strategy=strategy)


def compile(expr: Any, args: Any = None, *, wrt: Any = None, backend: str = "numba",
            hessian: bool = False, cache_dir: str | os.PathLike | None = None,
            strategy: str = "auto", example: Any = None, data: Any = None,
            reduce: str | None = "sum") -> Any:
    """Compile `expr` (a Node, text, SymPy expression, or a list of them), or a Python
    function traced on symbols (array parameters' shapes by `example`: frontends/traced.py).

    `args` are the kernel's inputs in order (default: the free symbols by name); derivatives
    are taken with respect to `wrt` (default: all of `args`), e.g. a model's parameters while
    its data stay plain inputs. With the Numba backend, `strategy` picks straight-line kernels
    ("straight") or the instruction tape run by one cached interpreter ("tape", whose compile
    time does not grow with the expression); "auto" takes the tape for very large programs,
    and otherwise runs the first calls interpreted (Python per point, NumPy per batch: no
    compile wait) until the time they lose reaches what compiling (or loading from Numba's
    cache) costs, then switches to the straight-line kernels (`runtime.interpret`; the same
    numbers to rounding). "straight" compiles them on the first call.

    With `data` (the symbols of one row of each data array), `expr` is written for one row and
    the result is a `runtime.reduction.ReducedFunction`: ``fn(params, *arrays)`` reduces it over
    the rows (`reduce`: "sum", "mean", or None for every row) in one pass, with derivatives
    w.r.t. `args` (the parameters); the batch axis is a loop, not unrolled.
    """
    if data is not None:
        return compile_reduced(expr, args, data, reduce=reduce, wrt=wrt, backend=backend,
                               hessian=hessian, cache_dir=cache_dir)
    if callable(expr) and not isinstance(expr, Node):  # a Python function: trace it
        return compile_function(CompiledFunction, expr, args, example=example, wrt=wrt,
                                backend=backend, hessian=hessian, cache_dir=cache_dir,
                                strategy=strategy)
    return CompiledFunction(expr, args, wrt=wrt, backend=backend, hessian=hessian,
                            cache_dir=cache_dir, strategy=strategy)
