"""Freeze a define-by-run function into a compiled static one (like torch.compile / jax.jit).

    >>> @freeze(backend="python")
    ... def f(x):
    ...     y = x
    ...     while y < 10.0:          # Python decides the trip count from the value
    ...         y = y * x
    ...     return y
    >>> f(3.0), f.value_and_grad(3.0)  # 27.0, (27.0, (array(27.),))

The function runs once on symbolic leaves (the trace): every operation is recorded as scalar
nodes, and the path Python took is remembered as guards, i.e. the values Python looked at
(``bool(y < 10)``, ``.item()``). One kernel is compiled per trace computing
``[outputs..., guard values..., gradients...]``. A call runs the kernel and checks the guards;
if an input takes another path, the function is traced again (up to `max_traces` paths), so the
frozen function gives the same numbers as running it eagerly. Tensors the function reads from
outside (model parameters with ``requires_grad``) are kernel inputs read at every call; plain
tensors it reads from outside are constants of the trace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ad.differentiate import grad
from ..api import CompiledFunction
from ..api import compile as compile_kernel
from . import eager as dynamic
from . import tensor as sym

__all__ = ["freeze", "Frozen", "FreezeError"]
VALUE_GUARD_RTOL = 1e-12  # the kernel may round a value Python read differently from NumPy


class FreezeError(RuntimeError):
    """A frozen function that cannot be traced or called as asked."""


class _Trace:
    """One path through the function: its graph, guards, and (lazily) its kernels."""

    def __init__(self, frozen: Frozen, values: list[np.ndarray]) -> None:
        inputs = [dynamic.tensor(v, requires_grad=True, name=f"arg{i}")
                  for i, v in enumerate(values)]
        guards: list = []
        previous, dynamic._state["trace"] = dynamic._state["trace"], guards
        try:
            result = frozen.fn(*inputs)
        finally:
            dynamic._state["trace"] = previous
        if not isinstance(result, (dynamic.Tensor, int, float, np.ndarray)):
            raise FreezeError(f"a frozen function must return one tensor, got {type(result)}")
        out = dynamic._as(result)
        self.graph = out.graph if out.graph is not None else sym.constant(out._value)
        self.shapes = tuple(v.shape for v in values)
        self.out_shape = out.shape
        self.guards = [(kind, len(nodes), observed) for kind, nodes, observed, _ in guards]
        guard_nodes = [n for _, nodes, _, _ in guards for n in nodes]
        mine = {id(t) for t in inputs}
        captured: dict[int, dynamic.Tensor] = {}
        for leaves in [[leaf for leaf, _ in out._leaves]] + [g[3] for g in guards]:
            for leaf in leaves:
                if id(leaf) not in mine:
                    captured.setdefault(id(leaf), leaf)
        self.captured = list(captured.values())
        self.symbols = [t.graph.flat_nodes() for t in inputs]
        self.outputs = self.graph.flat_nodes() + guard_nodes
        self.frozen = frozen
        self.kernels: dict[bool, CompiledFunction] = {}

    def kernel(self, with_grad: bool) -> CompiledFunction:
        if with_grad not in self.kernels:
            outputs = self.outputs
            if with_grad:
                if len(self.graph.flat_nodes()) != 1:
                    raise FreezeError(f"value_and_grad needs a one-element output, this one "
                                      f"has shape {self.out_shape}")
                wrt = [n for i in self.frozen.wrt_indices(len(self.symbols))
                       for n in self.symbols[i]]
                outputs = outputs + grad(self.outputs[0], wrt)
            args = [n for group in self.symbols for n in group] + [
                n for leaf in self.captured for n in leaf.graph.flat_nodes()]
            self.kernels[with_grad] = compile_kernel(
                outputs, args, wrt=[], backend=self.frozen.backend,
                cache_dir=self.frozen.cache_dir)
        return self.kernels[with_grad]

    def run(self, values: list[np.ndarray], with_grad: bool, check: bool):
        """(value, gradients), or None if the inputs take another path than this trace."""
        point = np.concatenate([v.ravel() for v in values] +
                               [leaf._value.ravel() for leaf in self.captured] + [np.empty(0)])
        out = self.kernel(with_grad)(point)
        m = len(self.graph.flat_nodes())
        position = m
        for kind, count, observed in self.guards:
            got = out[position:position + count]
            position += count
            if not check:
                continue
            if kind == "truth" and bool(got[0]) != observed[0]:
                return None
            if kind == "value" and not np.allclose(got, observed, rtol=VALUE_GUARD_RTOL, atol=0.0,
                                                   equal_nan=True):
                return None
        value = out[:m].reshape(self.out_shape)
        value = float(value) if value.ndim == 0 else value
        gradients = []
        for i in self.frozen.wrt_indices(len(values)) if with_grad else ():
            gradients.append(out[position:position + values[i].size].reshape(values[i].shape))
            position += values[i].size
        return value, tuple(gradients)


class Frozen:
    """A compiled static version of `fn`; call it like `fn` (tensors, arrays or floats)."""

    def __init__(self, fn: Callable[..., Any], *, wrt: Sequence[int] | None = None,
                 backend: str = "numba", cache_dir: str | os.PathLike | None = None,
                 max_traces: int = 8) -> None:
        self.fn, self.wrt, self.backend, self.cache_dir = fn, wrt, backend, cache_dir
        self.max_traces = max_traces
        self._traces: list[_Trace] = []
        self.__name__ = getattr(fn, "__name__", "frozen")
        self.__doc__ = getattr(fn, "__doc__", None)

    def wrt_indices(self, count: int) -> list[int]:
        indices = list(range(count)) if self.wrt is None else list(self.wrt)
        if any(not 0 <= i < count for i in indices):
            raise FreezeError(f"wrt {indices} names arguments the function does not have "
                              f"({count} given)")
        return indices

    @property
    def trace_count(self) -> int:
        return len(self._traces)

    @property
    def graph(self) -> sym.Tensor:
        """The output's graph in the latest trace (for diagrams)."""
        if not self._traces:
            raise FreezeError("the function has not been traced yet: call it first")
        return self._traces[-1].graph

    def trace(self, *inputs) -> Frozen:
        """Trace at these inputs and compile the value kernel now (not at the first call)."""
        values = [dynamic._data(x) for x in inputs]
        self._new_trace(values).kernel(False)
        return self

    def _new_trace(self, values: list[np.ndarray]) -> _Trace:
        if len(self._traces) >= self.max_traces:
            raise FreezeError(f"{self.__name__} took more than {self.max_traces} different paths "
                              "(or .item() values); trace it less specifically, e.g. compare "
                              "tensors in if/while instead of reading .item(), or raise "
                              "max_traces")
        trace = _Trace(self, values)
        self._traces.append(trace)
        return trace

    def _run(self, inputs: tuple, with_grad: bool):
        values = [dynamic._data(x) for x in inputs]
        shapes = tuple(v.shape for v in values)
        for trace in reversed(self._traces):
            if trace.shapes == shapes:
                result = trace.run(values, with_grad, check=True)
                if result is not None:
                    return result
        # A fresh trace is right for these inputs by construction, so its guards are not
        # re-checked (the kernel may round a compared value differently from eager NumPy).
        return self._new_trace(values).run(values, with_grad, check=False)

    def __call__(self, *inputs) -> float | np.ndarray:
        return self._run(inputs, False)[0]

    def value_and_grad(self, *inputs) -> tuple[float, tuple[np.ndarray, ...]]:
        """The value and its gradient w.r.t. each input in `wrt` (default all), one kernel."""
        return self._run(inputs, True)


def freeze(fn: Callable[..., Any] | None = None, *example_inputs, wrt: Sequence[int] | None = None,
           backend: str = "numba", cache_dir: str | os.PathLike | None = None,
           max_traces: int = 8) -> Any:
    """``freeze(fn, *example_inputs)`` traces and compiles now; ``@freeze`` or
    ``@freeze(backend="python")`` on a definition traces at the first call."""
    if fn is None:
        return lambda f: freeze(f, wrt=wrt, backend=backend, cache_dir=cache_dir,
                                max_traces=max_traces)
    frozen = Frozen(fn, wrt=wrt, backend=backend, cache_dir=cache_dir, max_traces=max_traces)
    return frozen.trace(*example_inputs) if example_inputs else frozen

