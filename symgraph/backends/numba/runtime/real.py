"""`real`: a float64 argument that, called from Python, takes real numbers and refuses text.

Numba unboxes a float64 argument with ``PyNumber_Float``, which also parses strings
(``"1.5"`` would be taken as 1.5). A one-point kernel's compiled entry point (what the API's
one-point methods call, without the dispatcher) is typed with `real` instead: unboxed with
``PyFloat_AsDouble``, which takes what ``float()`` takes of numbers (float, int, bool, NumPy's
real scalars and 0-d arrays, anything with ``__float__`` or ``__index__``) and raises
TypeError for everything else (text, None, complex, arrays of more than one dimension's
worth) and OverflowError for an int beyond floats. Inside the machine code it is a double,
like float64; the point kernels' typers (`as_float64`) treat it as float64.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core.datamodel import models
from numba.extending import NativeValue, register_model, unbox


class Real(types.Float):
    """float64 in machine code, unboxed from Python with ``PyFloat_AsDouble``."""

    def __init__(self) -> None:
        super().__init__("float64")  # (Float reads its bit width from the name)

    @property
    def key(self) -> str:  # another type than float64 (types are equal by class and key)
        return "symgraph.real"

    def __reduce__(self) -> tuple:  # for Numba's cache index
        return (Real, ())

    def __str__(self) -> str:
        return "real"

    __repr__ = __str__


real = Real()


@register_model(Real)
class _RealModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, ir.DoubleType())


@unbox(Real)
def _unbox_real(typ: Any, obj: Any, c: Any) -> NativeValue:
    value = c.pyapi.float_as_double(obj)  # PyFloat_AsDouble: numbers, never text
    return NativeValue(value, is_error=c.pyapi.c_api_error())


def as_float64(ty: Any) -> Any:
    """`ty` with `real` read as float64 (the same machine representation): a tuple of reals
    is a tuple of floats to the lowering and to Numba's own front end."""
    if isinstance(ty, types.UniTuple) and isinstance(ty.dtype, Real):
        return types.UniTuple(types.float64, ty.count)
    return ty
