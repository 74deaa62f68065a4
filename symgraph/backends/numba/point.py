"""Emit the one-point path of a Numba module: ``NAME_point`` and the API's ``NAME_api``.

A call of ``fn.value_and_grad(x, y)`` is one small Python function and one compiled kernel:

* ``NAME_point(_x, _g)`` (jitted; ``point_line`` in symgraph's Numba runtime lowers the same
  steps as ``NAME_row``) takes the point as a tuple of floats, or as a float64 array, returns
  the value and writes the gradient into ``_g``: no input array to build, no output array to
  slice. ``value_point(_x)`` returns the value alone.
* ``NAME_api(_point, _points, _slow, ...)`` makes the function the API binds as
  ``value_and_grad``, ``grad`` or the value call. Its arguments are unpacked by name and their
  types checked in line (exact float or int; a float64 array of the point's shape), so the
  check costs a few nanoseconds an argument; the gradient goes into a new array or into
  ``out``. Anything else (NumPy scalars, bools, names, batches, a wrong ``out``) goes to
  ``_slow``, the API's checked path, which gives the same numbers and raises the same errors.

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


def has_point(p: Program) -> bool:
    """Whether `p` gets a point kernel: a scalar's value, or its value and gradient."""
    return (len(p.inputs) <= MAX_INPUTS and len(p.outputs) >= 1
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
    n, k, gradient = len(p.inputs), len(p.outputs) - 1, p.name != "value"
    names = ", ".join(p.inputs)
    numbers = [f"(type({v}) is float or type({v}) is int)" for v in p.inputs]
    array = f"type({{a}}) is _array and {{a}}.shape == ({n},) and {{a}}.dtype is _f64 and " \
            "{a}.flags.carray"
    if gradient:
        head = [f"def {p.name}_api(_point, _points, _slow, _grad):",
                f'{_I1}"""symgraph.api\'s value_and_grad (grad, with _grad) at one point: '
                f"floats or ints",
                f"{_I1}go to {p.name}_point as a tuple (_point: its compiled entry), a float64 "
                f"array of",
                f"{_I1}shape ({n},) as it is (_points); the gradient into a new array, or "
                f"into out. Anything",
                f'{_I1}else goes to _slow, the API\'s checked path (the same numbers; its '
                f'errors)."""',
                f"{_I1}_empty, _array, _f64 = np.empty, np.ndarray, np.dtype(np.float64)", "",
                f"{_I1}def call(*_x, out=None, **_named):"]
        found = [f"{_I2}if _kernel is not None and (out is None or (",
                 f"{_I3}{INDENT}type(out) is _array and out.shape == ({k},) and out.dtype is _f64",
                 f"{_I3}{INDENT}and out.flags.carray)):",
                 f"{_I3}_g = _empty({k}) if out is None else out",
                 f"{_I3}try:", f"{_I3}{INDENT}_value = _kernel(_p, _g)",
                 f"{_I3}except (TypeError, OverflowError):  # an int too big for a float",
                 f"{_I3}{INDENT}return _slow(*_x, out=out)",
                 f"{_I3}if _grad or out is not None:",
                 f"{_I3}{INDENT}return _g if _grad else _value",
                 f"{_I3}return _value, _g"]
        tail = [f"{_I2}return _slow(*_x, out=out, **_named)"]
    else:
        head = ["def value_api(_point, _points, _slow):",
                f'{_I1}"""symgraph.api\'s value call at one point: floats or ints go to '
                "value_point as a",
                f"{_I1}tuple (_point: its compiled entry), a float64 array of shape ({n},) as "
                "it is (_points).",
                f'{_I1}Anything else goes to _slow, the API\'s checked path (the same numbers; '
                'its errors)."""',
                f"{_I1}_array, _f64 = np.ndarray, np.dtype(np.float64)", "",
                f"{_I1}def call(*_x, **_named):"]
        found = [f"{_I2}if _kernel is not None:", f"{_I3}try:",
                 f"{_I3}{INDENT}return _kernel(_p)",
                 f"{_I3}except (TypeError, OverflowError):  # an int too big for a float",
                 f"{_I3}{INDENT}return _slow(*_x)"]
        tail = [f"{_I2}return _slow(*_x, **_named)"]
    body = [f"{_I2}_kernel = None", f"{_I2}if _named:", f"{_I3}pass",
            f"{_I2}elif len(_x) == {n}:", f"{_I3}{names}{',' if n == 1 else ''} = _x"]
    if n == 1:
        v = p.inputs[0]
        body += [*_condition("if", numbers), f"{_I3}{INDENT}_kernel, _p = _point, _x",
                 f"{_I3}elif {array.format(a=v)}:", f"{_I3}{INDENT}_kernel, _p = _points, {v}"]
    else:
        body += [*_condition("if", numbers), f"{_I3}{INDENT}_kernel, _p = _point, _x",
                 f"{_I2}elif len(_x) == 1:", f"{_I3}_p = _x[0]",
                 f"{_I3}if {array.format(a='_p')}:", f"{_I3}{INDENT}_kernel = _points"]
    body += [*found, *tail]
    return [*head, *body, "", f"{_I1}return call"]


def _condition(keyword: str, terms: list[str], per_line: int = 2) -> list[str]:
    """``if a and b ...:`` at the unpacking's indent, `per_line` terms a line."""
    rows = [" and ".join(terms[i:i + per_line]) for i in range(0, len(terms), per_line)]
    if len(rows) == 1:
        return [f"{_I3}{keyword} {rows[0]}:"]
    return [f"{_I3}{keyword} ({rows[0]}", *(f"{_I3}{INDENT * 2}and {r}" for r in rows[1:-1]),
            f"{_I3}{INDENT * 2}and {rows[-1]}):"]
