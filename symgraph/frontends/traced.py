"""A compiled Python function called the way the Python function is.

`sg.compile(f, example=(1.0, np.zeros(3)))` traces `f` (see `trace`) and compiles its
expressions; the result takes `f`'s arguments (scalars and arrays, by position or name) and
returns results shaped like them:

* ``fn(x, w)``: what `f` returns (a float, an array of its shape, or a tuple of them);
* ``fn.grad(x, w)``: one entry per differentiated parameter, each of that parameter's shape;
  with one parameter the entry itself (``fn.grad(w)`` is an array like `w`), with several a
  tuple (``gx, gw = fn.grad(x, w)``); ``value_and_grad`` gives ``(value, that)``;
* ``fn.jacobian``: per output and parameter a block of shape ``output.shape + param.shape``
  (a tuple over parameters, or over outputs, or a tuple of tuples: outputs outer);
* ``fn.hessian``: blocks of shape ``param_i.shape + param_j.shape`` (one, or a tuple of
  tuples).

Every argument may carry one leading axis of N points (a batch; arguments without it are the
same for every point), and every result then gains that axis first. ``fn.compiled`` is the
underlying `CompiledFunction`, whose inputs are the flattened order (`trace.symbols`: the
parameters in signature order, arrays row-major) and whose gradients are flat; ``fn.flatten``
turns arguments into its flat point. `wrt` names the parameters to differentiate by (the others
are plain inputs, like data).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .trace import Layout, Trace, trace


def _pair_blocks(array: np.ndarray, rows: Layout, columns: Layout, lead: int) -> Any:
    """Cut the last two axes of `array` (rows, columns) into blocks, rows outer."""
    by_column = columns.split(array, axis=-1)
    by_column = [by_column] if columns.single else list(by_column)
    blocks = [rows.split(np.asarray(c), axis=lead) for c in by_column]
    if rows.single and columns.single:
        return blocks[0]
    if rows.single:
        return tuple(blocks)
    if columns.single:
        return blocks[0]
    return tuple(tuple(blocks[j][i] for j in range(len(blocks))) for i in range(len(rows.shapes)))


class TracedFunction:
    """A compiled traced function: `f`'s arguments in, `f`-shaped results out."""

    def __init__(self, traced: Trace, compiled: Any, wrt: Any = None) -> None:
        self.trace = traced
        self.compiled = compiled
        self.parameters = traced.parameter_layout()
        self.wrt = traced.parameter_layout(wrt)
        self.__name__ = getattr(traced.function, "__name__", "traced")
        self.__doc__ = getattr(traced.function, "__doc__", None)

    def flatten(self, *values: Any, **named: Any) -> np.ndarray:
        """The arguments as the flat point (or batch of rows) `compiled` takes."""
        return self.parameters.flatten(self.trace.arguments(values, named))

    def __call__(self, *values: Any, **named: Any) -> Any:
        point = self.flatten(*values, **named)
        out = np.asarray(self.compiled(point), dtype=float)
        if self.trace.scalar:
            return out.item() if out.ndim == 0 else out
        return self.trace.output_layout.split(out.reshape(point.shape[:-1] + (-1,)))

    def value_and_grad(self, *values: Any, **named: Any) -> tuple[Any, Any]:
        """(value, gradient shaped like the parameters differentiated), from one kernel."""
        self._require_scalar("value_and_grad")
        value, gradient = self.compiled.value_and_grad(self.flatten(*values, **named))
        return value, self.wrt.split(np.asarray(gradient))

    def grad(self, *values: Any, **named: Any) -> Any:
        """The gradient, shaped like the parameters differentiated (see the module's doc)."""
        return self.value_and_grad(*values, **named)[1]

    def jacobian(self, *values: Any, **named: Any) -> Any:
        """Blocks ``output.shape + parameter.shape`` (see the module's doc)."""
        point = self.flatten(*values, **named)
        jac = np.asarray(self.compiled.jacobian(point))
        return _pair_blocks(jac, self.trace.output_layout, self.wrt, point.ndim - 1)

    def hessian(self, *values: Any, **named: Any) -> Any:
        """Blocks ``parameter_i.shape + parameter_j.shape`` (see the module's doc)."""
        self._require_scalar("hessian")
        point = self.flatten(*values, **named)
        return _pair_blocks(np.asarray(self.compiled.hessian(point)), self.wrt, self.wrt,
                            point.ndim - 1)

    def _require_scalar(self, what: str) -> None:
        if not self.trace.scalar:
            raise TypeError(f"{what} needs a function returning a scalar; use jacobian")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("compiled", "trace"):
            raise AttributeError(name)
        return getattr(self.compiled, name)  # source, path, op_counts, kernels...

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}{list(p.shape) if p.shape else ''}"
                          for p in self.trace.parameters)
        return f"<TracedFunction {self.__name__}({names}) via {self.compiled!r}>"

    def _repr_latex_(self) -> str:
        return self.compiled._repr_latex_()


def compile_function(factory: Callable[..., Any], function: Callable, args: Any = None, *,
                     example: Any = None, wrt: Any = None, **options: Any) -> TracedFunction:
    """Trace `function` and compile it with `factory` (CompiledFunction): see the module."""
    if args is not None:
        raise TypeError("a Python function's inputs are its parameters: give array shapes by "
                        "example=(...), not args")
    traced = trace(function, example)
    wrt_symbols = [s for p in traced.pick(wrt) for s in p.symbols]
    outputs = traced.outputs[0] if traced.scalar else traced.outputs
    compiled = factory(outputs, traced.symbols, wrt=wrt_symbols, **options)
    return TracedFunction(traced, compiled, wrt)
