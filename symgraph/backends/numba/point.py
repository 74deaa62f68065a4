"""Emit the one-point path of a Numba module: ``NAME_point``, ``value_grad_floats`` and the
API's ``NAME_api``.

A call of ``fn.value_and_grad(x, y)`` is one small Python function and one compiled kernel:

* ``NAME_point(_x, _g)`` (jitted; ``point_line`` in symgraph's Numba runtime lowers the same
  steps as ``NAME_row``) takes the point as a tuple of numbers, or as a float64 array, returns
  the value and writes the gradient into ``_g``: no input array to build, no output array to
  slice. ``value_point(_x)`` returns the value alone.
* ``value_grad_floats(x, y)`` (jitted; ``floats_line``) returns ``(value, (g0, g1))``: floats
  in, floats out, no array at all. ``fn.value_and_grad_floats`` is the CPython entry the
  runtime emits beside its machine code (runtime.fastcall; runtime.points binds it).
* ``NAME_api(_point, _points, _slow, ...)`` makes the function the API binds as
  ``value_and_grad``, ``grad`` or the value call. Numbers go to the kernel's entry point as
  the call's own tuple, unchecked: the entry point's typing (`real`, in the runtime) takes
  floats and ints (and their subclasses: np.float64, bool) and raises for anything else, and
  that error sends the call to ``_slow``, the API's checked path, which gives the same numbers
  (other NumPy scalars, 0-d arrays) or says what is wrong, naming the argument. A float64
  array of the point's shape (any strides) is checked in line and goes to the array entry
  point; the gradient goes into a new array or into ``out`` (a writeable float64 array of its
  length, any strides).
  Names, batches and a wrong ``out`` go to ``_slow`` too.

Both kernels compute a program's packs (backends.numba.packs: independent calls of one
vecmath function, ``NAME_packs`` in the module, as many as this CPU's rule asks for:
backends.numba.simd) SIMD lanes at a time, the rest as the row does: their numbers are the
row's within an ulp per packed call (as lane kernels' are), libm's bits beyond vecmath's
exact range, and the same for numbers and arrays.

They exist only for a scalar expression's ``value`` and ``value_grad`` programs with at most
`MAX_INPUTS` inputs (beyond that, a point goes through the row kernel as before). The kernels
compile on first use, like every other kernel: one signature for numbers, one for arrays (and
one for value_grad_floats).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from ...lower.schedule import Program
from ..common import INDENT
from .batch import JIT
from .packs import limit

# More inputs than this: no point kernel. The floats entry's typing and compile grow with
# the inputs (250: ~1.5 s more at load 4), and its numbers' conversion (~35 ns each) passes the
# row's call; up to here it is 2-3x faster than numba.njit's dispatch of the same floats
# (80 inputs: 0.98 against 3.3 us; past 64, the checked path took 9 us).
MAX_INPUTS = 256
_I1, _I2, _I3 = INDENT, INDENT * 2, INDENT * 3


def has_point(p: Program) -> bool:
    """Whether `p` gets a point kernel: a scalar's value, or its value and gradient."""
    return (1 <= len(p.inputs) <= MAX_INPUTS and len(p.outputs) >= 1
            and (p.name == "value_grad" or (p.name == "value" and len(p.outputs) == 1)))


def point_lines(p: Program, found: Sequence[tuple[str, tuple]] = ()) -> list[str]:
    """``_NAME_point = point_line(NAME_steps)``, the jitted ``NAME_point`` (and, for value_grad,
    ``value_grad_floats``) and ``NAME_api``; with `found` (backends.numba.packs), the packs
    ``NAME_packs`` that both kernels compute SIMD lanes at a time."""
    packed = f", {p.name}_packs" if found else ""
    lines = [*_packs(p, found), f"_{p.name}_point = point_line({p.name}_steps{packed})", "", "",
             JIT]
    if p.name == "value":
        lines += ["def value_point(_x):", f"{_I1}return _value_point(_x, None)"]
    else:
        k, labels = len(p.outputs) - 1, [label for label, _ in p.outputs[1:]]
        shown = ", ".join(labels if k <= 3 else [labels[0], "...", labels[-1]])
        lines += [f"def {p.name}_point(_x, _g):", f"{_I1}return _{p.name}_point(_x, _g)", "",
                  "", f"_{p.name}_floats = floats_line({p.name}_steps, {k}{packed})", "", "", JIT,
                  *_wrapped(f"def {p.name}_floats(", list(p.inputs), "):", ""),
                  f'{_I1}"""(value, ({shown})): symgraph.api\'s value_and_grad_floats."""',
                  *_wrapped(f"{_I1}return _{p.name}_floats((", list(p.inputs),
                            ",))" if len(p.inputs) == 1 else "))", _I1)]
    return lines + ["", "", *_api(p)]


def _packs(p: Program, found: Sequence[tuple[str, tuple]]) -> list[str]:
    """``NAME_packs = (...)``: each pack's vecmath function, the condition on an operand x
    under which libm's value replaces it, and its members' targets (a name, or a tuple of
    the sin and the cos of one operand)."""
    if not found:
        return []
    lines = [f"# {p.name}_steps' independent calls of one function that the point kernels compute",
             "# SIMD lanes at a time: (vecmath function, libm instead where, the steps' targets)",
             f"{p.name}_packs = ("]
    for function, members in found:
        items = [repr(function) + ",", repr(limit(function)) + ","] + [
            (repr(m[0]) if len(m) == 1 else "(" + ", ".join(map(repr, m)) + ")") + ","
            for m in members]
        items[-1] = items[-1][:-1]
        line = _I1 + "("
        for item in items:
            if len(line) + len(item) + 1 > 96:
                lines.append(line.rstrip())
                line = _I2
            line += item + " "
        lines.append(line.rstrip() + "),")
    return [*lines, ")", "", ""]


def _api(p: Program) -> list[str]:
    n = len(p.inputs)
    entries = [f"numbers go to {p.name}_point as the call's own tuple (_point: its compiled",
               f"entry, which takes floats and ints only), a float64 array of shape ({n},)",
               "as it is (_points);"]
    if p.name == "value":
        doc = ["symgraph.api's value call at one point:", *entries[:2],
               entries[2] + " anything else to _slow, the API's checked path (the same numbers;",
               "its errors)."]
        lines = ["def value_api(_point, _points, _slow):", *_docstring(doc),
                 f"{_I1}_array, _f64 = np.ndarray, np.dtype(np.float64)"]
        return lines + ["", *_call(p, "value", "_slow", {"": ["return {k}(_p)"]}), "",
                        f"{_I1}return value"]
    k = len(p.outputs) - 1
    doc = ["symgraph.api's value_and_grad and grad at one point:", *entries[:2],
           entries[2] + " the gradient into a new array, or into out. Anything else goes to",
           "_slow and _slow_grad, the API's checked paths (the same numbers; their errors)."]
    fits = (f"type(out) is _array and out.dtype is _f64 and out.ndim == 1 and len(out) == {k} "
            "and out.flags.writeable")
    lines = [f"def {p.name}_api(_point, _points, _slow, _slow_grad):", *_docstring(doc),
             f"{_I1}_empty, _array, _f64 = np.empty, np.ndarray, np.dtype(np.float64)"]
    both = {"out is None": [f"_g = _empty({k})", "return {k}(_p, _g), _g"],
            fits: ["return {k}(_p, out)"]}
    grad = {"out is None": [f"_g = _empty({k})", "{k}(_p, _g)", "return _g"],
            fits: ["{k}(_p, out)", "return out"]}
    return lines + ["", *_call(p, "value_and_grad", "_slow", both), "",
                    *_call(p, "grad", "_slow_grad", grad), "",
                    f"{_I1}return value_and_grad, grad"]


def _call(p: Program, name: str, slow: str, cases: dict[str, list[str]]) -> list[str]:
    """The closure `name`: its numbers and array fast paths, each taking the first of `cases`
    (condition -> statements, with {k} the kernel) that holds, else `slow`."""
    n, out = len(p.inputs), ", out=None" if name != "value" else ""

    def taken(kernel: str, argument: str, indent: str, guarded: bool) -> list[str]:
        lines = []
        for keyword, (condition, statements) in zip(["if", *["elif"] * len(cases)],
                                                    cases.items()):
            body = [s.format(k=kernel).replace("(_p", f"({argument}") for s in statements]
            if condition:
                line = f"{indent}{keyword} {condition}:"
                if len(line) > 96:  # the out check: its last terms on a line of their own
                    terms = condition.split(" and ")
                    head, last = " and ".join(terms[:3]), " and ".join(terms[3:])
                    line = f"{indent}{keyword} ({head}\n{indent}{INDENT * 2}and {last}):"
                lines.append(line)
                inner = indent + INDENT
            else:
                inner = indent
            if guarded:  # not floats or ints (the entry point refuses them): _slow takes them
                lines += [f"{inner}try:", *(f"{inner}{INDENT}{b}" for b in body),
                          f"{inner}except Exception:  # not floats or ints: the checked path",
                          f"{inner}{INDENT}pass"]
            else:
                lines += [inner + b for b in body]
        return lines

    # Any strides (the entry point takes layout "A"); an unaligned array's loads are plain
    # unaligned loads (x86-64 and arm64 take them).
    array = f"_p.dtype is _f64 and _p.ndim == 1 and len(_p) == {n}"
    lines = [f"{_I1}def {name}(*_x{out}, **_named):", f"{_I2}if _named:",
             f"{_I3}return {slow}(*_x{', out=out' if out else ''}, **_named)"]
    if n == 1:  # one argument: an array of the point, else a number
        lines += [f"{_I2}if len(_x) == 1:", f"{_I3}_p = _x[0]",
                  f"{_I3}if type(_p) is not _array:", *taken("_point", "_x", _I3 + INDENT, True),
                  f"{_I3}elif {array}:", *taken("_points", "_p", _I3 + INDENT, False)]
    else:
        lines += [f"{_I2}if len(_x) == {n}:", *taken("_point", "_x", _I3, True),
                  f"{_I2}elif len(_x) == 1:", f"{_I3}_p = _x[0]",
                  f"{_I3}if type(_p) is _array and {array}:",
                  *taken("_points", "_p", _I3 + INDENT, False)]
    extra = ", out=out" if out else ""
    return lines + [f"{_I2}return {slow}(*_x{extra}, **_named)"]


def _wrapped(head: str, items: list[str], tail: str, indent: str) -> list[str]:
    """``head + ", ".join(items) + tail``, continued on lines of at most ~96 characters."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else tail)
        if len(line) + len(piece) + 1 > 96 and line.strip() not in (head.strip(), ""):
            lines.append(line.rstrip())
            line = indent + INDENT * 2
        line += piece + (" " if i < len(items) - 1 else "")
    return lines + [line if items else head + tail]


def _docstring(parts: list[str]) -> list[str]:
    """The closure maker's docstring: `parts` joined and wrapped at 92 characters."""
    lines = textwrap.wrap('"""' + " ".join(parts) + '"""', 92)
    return [_I1 + line for line in lines]
