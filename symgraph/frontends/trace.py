"""Python functions as input: run them on symbols named after their parameters.

    >>> def f(x, w):
    ...     return np.sum(np.tanh(w * x)) + np.sin(x)
    >>> traced = trace(f, example=(1.0, np.zeros(3)))
    >>> [s.name for s in traced.symbols]        # the kernel's inputs, in this order
    ['x', 'w[0]', 'w[1]', 'w[2]']

A scalar parameter becomes one symbol with its name; an array parameter (its shape taken from
an example value: only the shape counts) becomes a `SymbolicArray` of symbols named
``w[0]``, ``w[1]``... (``W[0,1]`` for 2-D), row-major. The flattened order, the one the
underlying kernels take, is the parameters in signature order, each array's elements
row-major. A parameter with a default keeps its default (a constant of the trace) unless the
example gives it. The function may return a scalar, an array (or list), or a tuple of them.

Python decides nothing on symbolic values: ``if x > 0`` raises (use ``np.where`` or
``sg.where``; `symgraph.dynamic.freeze` traces per path instead), and so does ``float(x)``
(``math.sin(x)``: use ``np.sin``). ``x == y`` of two nodes is identity, as everywhere in
symgraph; ``np.equal(x, y)`` (or ``==`` between symbolic arrays) builds the comparison.
Symbolic values go in object arrays (``np.zeros_like(w)`` of a symbolic `w`), not float ones.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.node import Node, _as_node, symbol
from ..ir.numpy_arrays import SymbolicArray, pack
from ..ir.traversal import bulk

Shape = tuple[int, ...]


def element_names(name: str, shape: Shape) -> list[str]:
    """``w`` for a scalar; ``w[0]``, ``w[1]``... or ``W[0,1]`` for the elements of an array."""
    if not shape:
        return [name]
    return [f"{name}[{','.join(map(str, i))}]" for i in np.ndindex(*shape)]


@dataclass(frozen=True)
class Parameter:
    """One traced parameter: its name, shape (``()`` for a scalar) and symbols (row-major)."""

    name: str
    shape: Shape
    symbols: tuple[Node, ...]
    keyword_only: bool = False

    @property
    def size(self) -> int:
        return len(self.symbols)

    def value(self) -> Any:
        """What the function is called with: the symbol, or an array of them."""
        return self.symbols[0] if not self.shape else pack(list(self.symbols), self.shape)


class Layout:
    """Shapes laid out one after another in a flat vector: how structured arguments and results
    map to the kernels' flat inputs and outputs. `single`: one entry, not in a tuple."""

    def __init__(self, shapes: Sequence[Shape], names: Sequence[str], single: bool) -> None:
        self.shapes, self.names, self.single = list(shapes), list(names), single
        self.sizes = [math.prod(s) for s in self.shapes]
        self.offsets = np.cumsum([0, *self.sizes]).tolist()
        self.size = self.offsets[-1]

    def flatten(self, values: Sequence) -> np.ndarray:
        """Float64 (size,) for a point, (N, size) for a batch (each value may carry a leading
        axis of N points; values without it are the same for every point)."""
        if len(values) != len(self.shapes):
            raise TypeError(f"expected {len(self.shapes)} argument(s) {self.names}, "
                            f"got {len(values)}")
        arrays, lead = [], ()
        for value, shape, name in zip(values, self.shapes, self.names):
            array = np.asarray(value, dtype=np.float64)
            extra = array.ndim - len(shape)
            if extra not in (0, 1) or array.shape[extra:] != shape or (
                    extra and lead and array.shape[:1] != lead):
                raise ValueError(f"argument {name!r} has shape {array.shape}; expected {shape}"
                                 f" (or a leading axis of points: (N, {', '.join(map(str, shape))}"
                                 f"{',' if len(shape) == 1 else ''}))")
            lead = array.shape[:1] if extra else lead
            arrays.append(array)
        flat = np.empty(lead + (self.size,))
        for array, shape, start, size in zip(arrays, self.shapes, self.offsets, self.sizes):
            batched = array.ndim > len(shape)  # a point's value is the same for every row
            flat[..., start:start + size] = array.reshape((len(array), size) if batched
                                                          else (size,))
        return flat

    def split(self, array: np.ndarray, axis: int = -1) -> Any:
        """`array`'s `axis` (of length `size`) cut into the entries, each reshaped to its shape
        (a scalar entry drops the axis); one entry, or a tuple of them."""
        axis = axis % array.ndim
        pieces = []
        for shape, start, size in zip(self.shapes, self.offsets, self.sizes):
            part = np.take(array, np.arange(start, start + size), axis=axis)
            part = part.reshape(part.shape[:axis] + shape + part.shape[axis + 1:])
            pieces.append(part.item() if part.ndim == 0 else part)
        return pieces[0] if self.single else tuple(pieces)


@dataclass
class Trace:
    """A Python function traced on symbols: its parameters, outputs and their layouts."""

    function: Callable
    parameters: list[Parameter]
    outputs: list[Node]
    output_layout: Layout

    @property
    def symbols(self) -> list[Node]:
        """Every parameter's symbols in the flattened order: the kernels' inputs."""
        return [s for p in self.parameters for s in p.symbols]

    @property
    def scalar(self) -> bool:
        return self.output_layout.single and self.output_layout.shapes[0] == ()

    def parameter_layout(self, names: Sequence[str] | None = None) -> Layout:
        chosen = self.pick(names)
        return Layout([p.shape for p in chosen], [p.name for p in chosen], len(chosen) == 1)

    def pick(self, names: Sequence[str] | str | None) -> list[Parameter]:
        """The parameters named (None: all), in the order given."""
        if names is None:
            return list(self.parameters)
        if isinstance(names, str):
            names = names.replace(",", " ").split()
        by_name = {p.name: p for p in self.parameters}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise ValueError(f"{unknown} are not traced parameters of "
                             f"{self.function.__name__}; they are {list(by_name)}")
        return [by_name[n] for n in names]

    def arguments(self, values: tuple, named: dict) -> list:
        """A call's values in parameter order (positional and by name, like the function)."""
        if not named and len(values) == len(self.parameters):
            return list(values)
        positional = [p for p in self.parameters if not p.keyword_only]
        if len(values) > len(positional):
            raise TypeError(f"{self.function.__name__} takes {len(positional)} positional "
                            f"argument(s) here, got {len(values)}")
        given = dict(zip((p.name for p in positional), values))
        for name, value in named.items():
            if name in given:
                raise TypeError(f"argument {name!r} given twice")
            given[name] = value
        missing = [p.name for p in self.parameters if p.name not in given]
        extra = sorted(set(given) - {p.name for p in self.parameters})
        if missing or extra:
            raise TypeError(f"the traced {self.function.__name__} takes "
                            f"{[p.name for p in self.parameters]}; missing {missing}, "
                            f"not traced (fixed or unknown) {extra}")
        return [given[p.name] for p in self.parameters]


def _examples(signature: inspect.Signature, example: Any) -> dict[str, Any]:
    if example is None:
        return {}
    if isinstance(example, dict):
        return dict(example)
    positional = [p.name for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in signature.parameters.values()
                if p.name in positional and p.default is p.empty]
    # A list is one entry per parameter too, unless it is a one-parameter function's numbers.
    per_parameter = isinstance(example, tuple) or isinstance(example, list) and (
        len(required) != 1 or not all(isinstance(e, (int, float, np.number)) for e in example))
    entries = tuple(example) if per_parameter else (example,)
    if len(entries) > len(positional):
        raise TypeError(f"example has {len(entries)} entries for {len(positional)} positional "
                        f"parameter(s) {positional}")
    return dict(zip(positional, entries))


def _shape(name: str, value: Any) -> Shape:
    if isinstance(value, Node):
        return ()
    try:
        return tuple(int(n) for n in np.shape(value))
    except Exception as error:
        raise TypeError(f"the example of {name!r} must be a number or an array, "
                        f"got {type(value).__name__}") from error


def _parameters(function: Callable, example: Any) -> list[Parameter]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as error:
        raise TypeError(f"cannot read the parameters of {function!r} to trace it") from error
    examples = _examples(signature, example)
    unknown = sorted(set(examples) - set(signature.parameters))
    if unknown:
        raise TypeError(f"example names {unknown}, which are not parameters of "
                        f"{function.__name__}{signature}")
    parameters = []
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue  # *args and **kwargs are not traced: name the parameters
        if p.name not in examples and p.default is not p.empty:
            continue  # a default stays: a constant of the trace
        shape = _shape(p.name, examples.get(p.name, 0.0))
        symbols = tuple(symbol(n) for n in element_names(p.name, shape))
        parameters.append(Parameter(p.name, shape, symbols, p.kind == p.KEYWORD_ONLY))
    return parameters


def _outputs(result: Any, name: str) -> tuple[list[Node], Layout]:
    single = not isinstance(result, tuple)
    entries = [result] if single else list(result)
    nodes, shapes = [], []
    for entry in entries:
        array = entry if isinstance(entry, np.ndarray) else np.asarray(
            entry if not isinstance(entry, Node) else _single(entry), dtype=object)
        if array.dtype != object:
            array = array.astype(object)
        try:
            nodes.extend(_as_node(v) for v in array.reshape(-1).tolist())
        except TypeError as error:
            raise TypeError(f"{name} returned {type(entry).__name__}; a traced function "
                            "returns expressions: a scalar, an array, or a tuple of them"
                            ) from error
        shapes.append(array.shape)
    return nodes, Layout(shapes, [f"output {i}" for i in range(len(shapes))], single)


def _single(node: Node) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = node
    return out


@bulk
def trace(function: Callable, example: Any = None) -> Trace:
    """Call `function` on symbols named after its parameters (see the module's doc).

    `example`: a tuple (or list) with one entry per positional parameter, or a dict by name,
    or for a one-parameter function its value alone (a list of numbers is that value); each
    a number or an array of the shape the parameter takes. Parameters not in it are scalars.
    """
    parameters = _parameters(function, example)
    positional = [p.value() for p in parameters if not p.keyword_only]
    keywords = {p.name: p.value() for p in parameters if p.keyword_only}
    name = getattr(function, "__name__", "the function")
    try:
        result = function(*positional, **keywords)
    except Exception as error:
        kinds = ", ".join(f"{p.name}: {'symbol' if not p.shape else f'{p.shape} array'}"
                          for p in parameters)
        hint = f"while tracing {name} on symbols ({kinds})"
        if isinstance(error, (TypeError, IndexError)) and any(not p.shape for p in parameters):
            hint += ("; if a parameter is an array, give its shape by an example: "
                     "sg.compile(f, example=(1.0, np.zeros(3)))")
        error.add_note(hint)
        raise
    nodes, layout = _outputs(result, name)
    return Trace(function, parameters, nodes, layout)


__all__ = ["Layout", "Parameter", "SymbolicArray", "Trace", "element_names", "trace"]
