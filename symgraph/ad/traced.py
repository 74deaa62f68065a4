"""``sg.grad(f)``, ``sg.jacobian(f)``, ``sg.hessian(f)`` of a Python function: a function.

    >>> df = sg.grad(lambda x, w: np.sum(np.tanh(w * x)))
    >>> gx, gw = df(1.0, np.array([0.5, 2.0]))          # shaped like the arguments

The derivative function traces `f` at its arguments' shapes (once per set of shapes),
differentiates the trace, and evaluates the derivative with the reference evaluator; results
are shaped as `TracedFunction` documents (frontends/traced.py). For speed, compile instead:
``sg.compile(f, example=...).grad``. For the expressions, differentiate the trace:
``sg.grad(trace(f, example).outputs[0])``. `wrt` names the parameters to differentiate by.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..frontends.trace import Layout, Trace, trace
from ..frontends.traced import _pair_blocks
from ..ir.evaluate import evaluate
from ..ir.node import Node


def _symbolic(value: Any) -> bool:
    return isinstance(value, Node) or isinstance(value, np.ndarray) and value.dtype == object


def derivative_function(kind: str, function: Callable, wrt: Any,
                        differentiate: Callable[..., list[list[Node]]]) -> Callable[..., Any]:
    """The `kind` ("grad", "jacobian" or "hessian") of `function`, as a function;
    `differentiate` is differentiate.jacobian (grad, jacobian) or differentiate.hessian."""
    signature = inspect.signature(function)
    traces: dict[tuple, Trace] = {}

    def derivative(*values: Any, **named: Any) -> Any:
        bound = signature.bind(*values, **named).arguments
        key = tuple((name, np.shape(value)) for name, value in bound.items())
        traced = traces.get(key)
        if traced is None:
            traced = traces[key] = trace(function, example=bound)
        if kind != "jacobian" and not traced.scalar:
            raise TypeError(f"sg.{kind} of a function needs it to return a scalar; "
                            "use sg.jacobian")
        chosen = [s for p in traced.pick(wrt) for s in p.symbols]
        rows = differentiate(traced.outputs[0] if kind == "hessian" else traced.outputs, chosen)
        flat = [node for row in rows for node in row]
        shape = (len(rows), len(chosen))
        layout, arguments = traced.parameter_layout(wrt), traced.arguments(values, named)
        if any(_symbolic(a) for a in arguments):
            raise TypeError(f"sg.{kind}(f) takes numbers; for the derivative's expressions "
                            f"differentiate the trace: sg.{kind}(trace(f, example).outputs...)")
        point = traced.parameter_layout().flatten(arguments)
        numbers = evaluate(flat, {s: x for s, x in zip(traced.symbols, point.tolist())})
        return _shaped(np.array(numbers, dtype=float).reshape(shape), traced, layout, kind)

    derivative.__name__ = f"{kind}_of_{getattr(function, '__name__', 'function')}"
    derivative.__doc__ = f"sg.{kind} of {derivative.__name__[len(kind) + 4:]} (ad/traced.py)."
    return derivative


def _shaped(array: Any, traced: Trace, layout: Layout, kind: str) -> Any:
    if kind == "grad":
        return layout.split(array[0])
    rows = layout if kind == "hessian" else traced.output_layout
    return _pair_blocks(array, rows, layout, 0)
