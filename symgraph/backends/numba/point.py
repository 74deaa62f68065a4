"""Emit the one-point path of a Numba module: ``NAME_point`` and the API's ``NAME_api``.

A call of ``fn.value_and_grad(x, y)`` is one small Python function and one compiled kernel:

* ``NAME_point(_x, _g)`` (jitted; ``point_line`` in symgraph's Numba runtime lowers the same
  steps as ``NAME_row``) takes the point as a tuple of floats, or as a float64 array, returns
  the value and writes the gradient into ``_g``: no input array to build, no output array to
  slice. ``value_point(_x)`` returns the value alone.
* ``NAME_api(_point, _points, _slow, ...)`` makes the function the API binds as
  ``value_and_grad``, ``grad`` or the value call. Its arguments are unpacked by name and their
  types checked in line (exactly float, int or np.float64; a float64 array of the point's
  shape), so the check costs a few nanoseconds an argument; the gradient goes into a new
  array or into ``out``. Anything else (other NumPy scalars, bools, names, batches, a wrong
  ``out``) goes to ``_slow``, the API's checked path, which gives the same numbers and raises
  the same errors.

Both exist only for a scalar expression's ``value`` and ``value_grad`` programs with at most
`MAX_INPUTS` inputs (beyond that, a point goes through the row kernel as before). The kernels
compile on first use, like every other kernel: one signature for floats, one for arrays.
"""

from __future__ import annotations

from ...lower.schedule import Program
from ..common import INDENT
from .batch import JIT

MAX_INPUTS = 64  # more inputs than this: no point kernel (the checks would cost a row's call)
_I1, _I2, _I3 = INDENT, INDENT * 2, INDENT * 3
# The types that go in as they are (the entry point's float() of them is NumPy's float64)
_NUMBERS = f"{INDENT}_numbers = frozenset({{float, int, np.float64}})"


def has_point(p: Program) -> bool:
    """Whether `p` gets a point kernel: a scalar's value, or its value and gradient."""
    return (1 <= len(p.inputs) <= MAX_INPUTS and len(p.outputs) >= 1
            and (p.name == "value_grad" or (p.name == "value" and len(p.outputs) == 1)))


def point_lines(p: Program) -> list[str]:
    """``_NAME_point = point_line(NAME_steps)``, the jitted ``NAME_point`` and ``NAME_api``."""
    lines = [f"_{p.name}_point = point_line({p.name}_steps)", "", "", JIT]
    if p.name == "value":
        lines += ["def value_point(_x):", f"{_I1}return _value_point(_x, None)"]
    else:
        lines += [f"def {p.name}_point(_x, _g):", f"{_I1}return _{p.name}_point(_x, _g)"]
    return lines + ["", "", *_api(p)]


def _api(p: Program) -> list[str]:
    n = len(p.inputs)
    if p.name == "value":
        doc = ["symgraph.api's value call at one point: floats or ints go to value_point as "
               "a tuple", f"(_point: its compiled entry), a float64 array of shape ({n},) as "
               "it is (_points); anything", "else to _slow, the API's checked path (the same "
               'numbers; its errors)."""']
        lines = ["def value_api(_point, _points, _slow):", f'{_I1}"""{doc[0]}',
                 *(_I1 + d for d in doc[1:]),
                 f"{_I1}_array, _f64 = np.ndarray, np.dtype(np.float64)", _NUMBERS]
        return lines + ["", *_call(p, "value", "_slow", {"": ["return {k}(_p)"]}), "",
                        f"{_I1}return value"]
    k = len(p.outputs) - 1
    doc = ["symgraph.api's value_and_grad and grad at one point: floats or ints go to",
           f"{p.name}_point as a tuple (_point: its compiled entry), a float64 array of "
           f"shape ({n},)", "as it is (_points); the gradient into a new array, or into out. "
           "Anything else goes", "to _slow and _slow_grad, the API's checked paths (the same "
           'numbers; their errors)."""']
    fits = (f"type(out) is _array and out.shape == ({k},) and out.dtype is _f64 and "
            "out.flags.carray")
    lines = [f"def {p.name}_api(_point, _points, _slow, _slow_grad):", f'{_I1}"""{doc[0]}',
             *(_I1 + d for d in doc[1:]),
             f"{_I1}_empty, _array, _f64 = np.empty, np.ndarray, np.dtype(np.float64)", _NUMBERS]
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
    n, names, out = len(p.inputs), ", ".join(p.inputs), ", out=None" if name != "value" else ""
    numbers = [f"type({v}) in _numbers" for v in p.inputs]

    def taken(kernel: str, indent: str, guarded: bool) -> list[str]:
        lines = []
        for keyword, (condition, statements) in zip(["if", *["elif"] * len(cases)],
                                                    cases.items()):
            body = [s.format(k=kernel) for s in statements]
            if condition:
                line = f"{indent}{keyword} {condition}:"
                if len(line) > 96:  # the out check: its last term on a line of its own
                    head, _, last = condition.rpartition(" and ")
                    line = f"{indent}{keyword} ({head}\n{indent}{INDENT * 2}and {last}):"
                lines.append(line)
                inner = indent + INDENT
            else:
                inner = indent
            if guarded:  # an int too big for a float: _slow says so
                lines += [f"{inner}try:", *(f"{inner}{INDENT}{b}" for b in body),
                          f"{inner}except (TypeError, OverflowError):  # an int beyond floats",
                          f"{inner}{INDENT}pass"]
            else:
                lines += [inner + b for b in body]
        return lines

    array = f"type({{a}}) is _array and {{a}}.shape == ({n},) and {{a}}.dtype is _f64 and " \
            "{a}.flags.carray"
    lines = [f"{_I1}def {name}(*_x{out}, **_named):",
             f"{_I2}if len(_x) == {n} and not _named:",
             f"{_I3}{names}{',' if n == 1 else ''} = _x", *_condition("if", numbers),
             *taken("_point", _I3 + INDENT, True)]
    if n == 1:
        v = p.inputs[0]
        lines += [f"{_I3}elif {array.format(a=v)}:", *taken("_points", _I3 + INDENT, False)]
        lines = [line.replace("(_p", f"({v}") if "_points" in line else line for line in lines]
        lines = [line.replace("_point(_p", "_point(_x") for line in lines]
    else:
        lines += [f"{_I2}elif len(_x) == 1 and not _named:", f"{_I3}_p = _x[0]",
                  f"{_I3}if {array.format(a='_p')}:", *taken("_points", _I3 + INDENT, False)]
        lines = [line.replace("_point(_p", "_point(_x") for line in lines]
    extra = ", out=out" if out else ""
    return lines + [f"{_I2}return {slow}(*_x{extra}, **_named)"]


def _condition(keyword: str, terms: list[str], per_line: int = 3) -> list[str]:
    """``if a and b ...:`` at the unpacking's indent, `per_line` terms a line."""
    rows = [" and ".join(terms[i:i + per_line]) for i in range(0, len(terms), per_line)]
    if len(rows) == 1:
        return [f"{_I3}{keyword} {rows[0]}:"]
    return [f"{_I3}{keyword} ({rows[0]}", *(f"{_I3}{INDENT * 2}and {r}" for r in rows[1:-1]),
            f"{_I3}{INDENT * 2}and {rows[-1]}):"]
