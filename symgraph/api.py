"""The Python API: `compile` an expression into kernels for its value and derivatives.

    >>> import symgraph as sg
    >>> x, y = sg.symbols("x y")
    >>> fn = sg.compile(x**2 * y + sg.sin(y), [x, y])
    >>> value, gradient = fn.value_and_grad(3.0, 2.0)

Every derivative comes from one fused kernel (value and gradient in a single pass, sharing the
forward subexpressions). A point is floats, a 1-D array, or keywords by symbol name; a batch is
a 2-D array with one row per point.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .backends.numba.cache import Entry, entry_point, resolve
from .backends.registry import BACKENDS, render_source
from .frontends.coerce import as_expression, as_symbols
from .frontends.traced import compile_function
from .ir.node import Node
from .ir.printer import to_latex
from .ir.traversal import bulk
from .lower.programs import build_programs
from .lower.schedule import Program
from .runtime import outputs
from .runtime.batching import rows_per_thread, run_batch, run_shared
from .runtime.expression_cache import (
    expression_key,
    load_programs,
    load_tape,
    save_programs,
    save_tape,
)
from .runtime.loading import default_cache_dir, load_source

_F64 = np.dtype(np.float64)
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
        self.call = entry_point(kernel, _ROW_TYPES) or self._first

    def _first(self, x: np.ndarray, out: np.ndarray) -> None:
        self.call = resolve(self.kernel, _ROW_TYPES)
        self.call(x, out)


_ROW_TYPES = (np.empty(0), np.empty(0))  # stand-ins for (x, out): 1-D float64, C order
_CHUNK_TYPES = (np.empty((0, 0)), np.empty((0, 0)), np.zeros(2, np.int64))  # X, OUT, claims


def _read_kept_module(folder: Path, name: str | None) -> str | None:
    """The text of a generated module a record names, if it is still there."""
    try:
        return (folder / name).read_text(encoding="utf-8") if name else None
    except OSError:
        return None


class CompiledFunction:
    """Kernels for an expression (or a vector of them) and its derivatives w.r.t. `wrt`.

    ``fn(*point)`` gives the value; ``grad``, ``value_and_grad``, ``jacobian`` and ``hessian``
    the derivatives. ``source`` is the generated module's text and ``path`` its file.
    """

    def __init__(self, expr: Any, args: Any = None, *, wrt: Any = None, backend: str = "numba",
                 hessian: bool = False, cache_dir: str | os.PathLike | None = None,
                 strategy: str = "auto") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {sorted(BACKENDS)}")
        self.scalar = not isinstance(expr, (list, tuple))
        self.outputs = [as_expression(e) for e in ([expr] if self.scalar else expr)]
        self.args = as_symbols(args, self.outputs)
        self.wrt = self.args if wrt is None else as_symbols(wrt, self.outputs)
        missing = [w.value for w in self.wrt if all(w is not a for a in self.args)]
        if missing:
            raise ValueError(f"wrt names {missing}, which are not among the arguments")
        self.backend = backend
        self.cache_dir = cache_dir
        self.has_hessian = hessian and self.scalar
        self._folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._key = expression_key(self.outputs, self.args, self.wrt, backend=backend,
                                   hessian=self.has_hessian, scalar=self.scalar,
                                   strategy=strategy)
        kept = load_programs(self._folder, self._key)
        record = kept[1] if kept is not None else {}
        source = _read_kept_module(self._folder, record.get("module"))
        if kept is not None and (source is not None or record.get("strategy") == "tape"):
            self.programs, self.strategy = kept[0], record["strategy"]
        else:  # differentiate, schedule (and below, render)
            record = {}
            # With nothing to differentiate by (wrt=[]) the derivative kernels would copy
            # `value`.
            self.programs = build_programs(self.outputs, self.args, self.wrt, self.scalar,
                                           self.has_hessian, bool(self.wrt))
            self.strategy = self._choose_strategy(strategy)
        if self.strategy == "tape":  # huge programs: one cached interpreter, no compile
            self.module, self.path = self._tape_module(self.programs), None
        else:
            self._source = source or render_source(self.programs, self.outputs, self.args,
                                                   backend)
            self.module, self.path = load_source(self._source, cache_dir)
        self._n, self._m, self._k = len(self.args), len(self.outputs), len(self.wrt)
        self._rows = {p.name: _Row(getattr(self.module, p.name + "_row")) for p in self.programs}
        self._batch_kernels = self._choose_batch_kernels(record.get("on_tape"))
        if not record:
            save_programs(self._folder, self._key, self.programs, strategy=self.strategy,
                          module=self.path and self.path.name,
                          on_tape=[p.name for p in self._on_tape])
        self._batches = self._batch_kernels
        if self.backend == "numba":  # kernels that release the GIL: threads share the rows
            self._batches = {p.name: self._threaded_batch(p) for p in self.programs}
        self._hessian_function: CompiledFunction | None = None
        # Per-instance fast paths (they shadow the methods of the same name): one closure
        # between the caller and the kernel, with everything it needs bound in advance.
        self._value = self._bind("value", self._m, _VALUE if self.scalar else _OUT)
        if self.scalar:
            self.value_and_grad = self._bind("value_grad", 1 + self._k, _VALUE_GRAD,
                                             "value_and_grad")
            self.grad = self._bind("value_grad", 1 + self._k, _GRAD, "grad")

    def _threaded_batch(self, p: Program) -> Callable[[np.ndarray, np.ndarray], None]:
        """Program `p`'s batches on Numba's threads: the module's chunk-claiming kernel, or
        (tapes) the batch kernel on parts of the rows."""
        chunks = getattr(self.module, p.name + "_chunks", None)
        if chunks is not None and p.name not in {q.name for q in self._on_tape}:
            # Through its entry point: X is float64, C order and aligned on every path here
            # (it may be read-only: the kernel never writes X).
            chunks = Entry(chunks, _CHUNK_TYPES)
            return functools.partial(run_shared, chunks, min_rows=rows_per_thread(p.cost))
        return functools.partial(run_batch, self._batch_kernels[p.name],
                                 min_rows=rows_per_thread(p.cost))

    @property
    def source(self) -> str:
        """The generated module's text, or the tape printed as readable steps (on first use:
        a 10^5-step tape takes a while to print)."""
        return self._source if self.strategy == "straight" else self.module.source

    def _choose_batch_kernels(self, on_tape: list[str] | None = None
                              ) -> dict[str, Callable[[np.ndarray, np.ndarray], None]]:
        """The module's batch kernels, except that a straight-line program too big for lane
        kernels, and heavy in exp/log/sin/cos/tanh..., runs its batches on the tape's lanes
        (SIMD vector math, nothing more to compile) instead of a loop over its row kernel.
        The tapes are built on the first batch: one-point users never pay for them."""
        kernels = {p.name: getattr(self.module, p.name + "_batch") for p in self.programs}
        self._on_tape: list[Program] = []
        self._batch_tapes = None
        if self.backend != "numba" or self.strategy != "straight":
            return kernels
        if on_tape is None:  # not decided before (and kept)
            from .backends.numba.batch import uses_lanes
            from .backends.tape.builder import lanes_beat_rows

            on_tape = [p.name for p in self.programs
                       if not uses_lanes(p) and lanes_beat_rows(p)]
        self._on_tape = [p for p in self.programs if p.name in on_tape]
        for p in self._on_tape:
            def on_tape(X: np.ndarray, OUT: np.ndarray, _name: str = p.name + "_batch") -> None:
                getattr(self.batch_tapes, _name)(X, OUT)

            on_tape.__name__ = on_tape.__qualname__ = p.name + "_batch"
            kernels[p.name] = on_tape
        return kernels

    @property
    def batch_tapes(self) -> Any:
        """The TapeModule running the batches of programs chosen for the tape's lanes (None if
        there are none); dask_support ships it beside the source."""
        if self._batch_tapes is None and self._on_tape:
            self._batch_tapes = self._tape_module(self._on_tape)
        return self._batch_tapes

    def _tape_module(self, programs: Sequence[Program]) -> Any:
        """The TapeModule of `programs`, their tapes read back from the cache folder, or built
        (and kept there)."""
        from .backends.tape.builder import build_tape
        from .backends.tape.module import TapeModule

        tapes = []
        for program in programs:
            tape = load_tape(self._folder, self._key, program)
            if tape is None:
                tape = bulk(build_tape)(program)
                save_tape(self._folder, self._key, tape)
            tapes.append(tape)
        return TapeModule(tapes)

    def kernels(self, name: str = "value_grad") -> tuple[Callable, Callable]:
        """The raw kernels behind the methods, for program `name` (``value``, ``value_grad``,
        ``value_jac``, ``value_grad_hess``): ``row(x, out)`` for one point and
        ``batch(X, OUT)`` for rows of points, writing into arrays you allocate (float64,
        C-contiguous, not overlapping; `OUT` has a column per output). The batch runs on the
        calling thread."""
        if name not in self._rows:
            raise KeyError(f"no program {name!r}; there are {sorted(self._rows)}")
        return getattr(self.module, name + "_row"), self._batch_kernels[name]

    def _choose_strategy(self, strategy: str) -> str:
        if self.backend == "python":
            if strategy == "tape":
                raise ValueError("the tape runs on the Numba interpreter: use backend='numba'")
            return "straight"
        from .backends.tape.builder import choose_strategy

        return choose_strategy(self.programs, strategy)

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
        point = values[0] if len(values) == 1 and np.ndim(values[0]) > 0 else values
        array = np.ascontiguousarray(point, dtype=np.float64)
        if not array.flags.aligned:  # the row kernel's entry point takes aligned arrays
            array = array.copy()
        if array.ndim == 0 or array.ndim > 2 or array.shape[-1] != self._n:
            raise ValueError(f"expected {self._n} value(s) per point for "
                             f"{[s.value for s in self.args]}, got shape {np.shape(point)}")
        return array

    def _run(self, kernel: str, size: int, values: tuple, named: dict) -> np.ndarray:
        if kernel not in self._rows:  # no derivative kernels (wrt=[]): derivatives are empty
            kernel, size = "value", self._m
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
            kernel, size = "value", self._m
        row, run, n, shape = self._rows[kernel], self._run, self._n, (self._n,)
        batch, batch_empty = self._batches[kernel], outputs.empty
        array, empty, ndarray, f64 = np.array, np.empty, np.ndarray, _F64
        # Numba's straight-line rows read every input before they write any output, so floats
        # can go in at the front of the array the results come back in (one allocation).
        shared = self.backend == "numba" and self.strategy == "straight" and (
            kind != _OUT or n <= size)  # a vector of outputs comes back as the whole array
        pad = (0.0,) * max(0, size - n)
        width = max(size, n) if shared else size
        tail = slice(1, size)  # the gradient
        values_grads, grads, value = kind == _VALUE_GRAD, kind == _GRAD, kind == _VALUE

        def slow(values: tuple, named: dict) -> Any:
            out = run(kernel, size, values, named)
            return _finish_batch(out, kind) if out.ndim == 2 else _finish(out, kind)

        def call(*values: Any, **named: Any) -> Any:
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
                    if (type(x) is ndarray and x.ndim == 2 and x.shape[1] == n
                            and x.dtype is f64 and x.flags.carray and len(values) == 1):
                        out = batch_empty((x.shape[0], size))  # a batch, as _run does it
                        batch(x, out)
                        return _finish_batch(out, kind)
                    return slow(values, named)
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
        """(value, gradient) of a scalar expression, from one fused kernel."""
        self._require_scalar("value_and_grad")
        return self._bind("value_grad", 1 + self._k, _VALUE_GRAD)(*values, **named)

    def grad(self, *values, **named) -> np.ndarray:
        """The gradient of a scalar expression (from the fused value+gradient kernel)."""
        self._require_scalar("value_and_grad")
        return self._bind("value_grad", 1 + self._k, _GRAD)(*values, **named)

    def jacobian(self, *values, **named) -> np.ndarray:
        """Shape (outputs, inputs) at a point, (points, outputs, inputs) for a batch."""
        if self.scalar:
            g = self.grad(*values, **named)
            return g[..., None, :]
        out = self._run("value_jac", self._m * (1 + self._k), values, named)
        jac = out[..., self._m:] if self._k else np.empty(out.shape[:-1] + (0,))
        return jac.reshape(out.shape[:-1] + (self._m, self._k))

    def hessian(self, *values, **named) -> np.ndarray:
        """Shape (inputs, inputs) at a point, (points, inputs, inputs) for a batch."""
        self._require_scalar("hessian")
        if not self.has_hessian:
            if self._hessian_function is None:  # built on first use, then kept
                self._hessian_function = CompiledFunction(
                    self.outputs[0], self.args, wrt=self.wrt, backend=self.backend,
                    hessian=True, cache_dir=self.cache_dir, strategy=self.strategy)
            return self._hessian_function.hessian(*values, **named)
        n = self._k
        out = self._run("value_grad_hess", 1 + n + n * n, values, named)
        return out[..., 1 + n:].reshape(out.shape[:-1] + (n, n)) if n else np.empty(
            out.shape[:-1] + (0, 0))

    def _require_scalar(self, what: str) -> None:
        if not self.scalar:
            raise TypeError(f"{what} needs a scalar expression; use jacobian for a vector")

    # -- inspection ---------------------------------------------------------------------------
    def op_counts(self, weighted: bool = False) -> dict[str, int]:
        """Arithmetic operations in each kernel (weighted by the op table's costs if asked):
        what value+derivatives cost against the value alone."""
        return {p.name: p.cost if weighted else p.op_count for p in self.programs}

    def __repr__(self) -> str:
        names = ", ".join(a.value for a in self.args)
        return f"<CompiledFunction ({names}) -> {self._m} output(s), {self.backend}: {self.path}>"

    def _repr_latex_(self) -> str:
        return "$" + r",\quad ".join(to_latex(o) for o in self.outputs) + "$"

    def _repr_svg_(self) -> str | None:
        from .pictures.draw import to_svg  # Graphviz is optional: None lets Jupyter fall back

        return to_svg(self.outputs)


def compile(expr: Any, args: Any = None, *, wrt: Any = None, backend: str = "numba",
            hessian: bool = False, cache_dir: str | os.PathLike | None = None,
            strategy: str = "auto", example: Any = None) -> CompiledFunction:
    """Compile `expr` (a Node, text, SymPy expression, or a list of them), or a Python
    function traced on symbols (array parameters' shapes by `example`: frontends/traced.py).

    `args` are the kernel's inputs in order (default: the free symbols by name); derivatives
    are taken with respect to `wrt` (default: all of `args`), e.g. a model's parameters while
    its data stay plain inputs. With the Numba backend, `strategy` picks straight-line kernels
    ("straight") or the instruction tape run by one cached interpreter ("tape", whose compile
    time does not grow with the expression); "auto" takes the tape for very large programs.
    """
    if callable(expr) and not isinstance(expr, Node):  # a Python function: trace it
        return compile_function(CompiledFunction, expr, args, example=example, wrt=wrt,
                                backend=backend, hessian=hessian, cache_dir=cache_dir,
                                strategy=strategy)
    return CompiledFunction(expr, args, wrt=wrt, backend=backend, hessian=hessian,
                            cache_dir=cache_dir, strategy=strategy)
