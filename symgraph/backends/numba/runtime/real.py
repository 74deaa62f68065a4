"""`real`: a float64 argument that, called from Python, takes a float or an int, nothing else.

Numba unboxes a float64 argument with ``PyNumber_Float``, which also parses strings
(``"1.5"`` would be taken as 1.5) and converts whatever has ``__float__`` (a masked constant
becomes nan). A one-point kernel's compiled entry point (what the API's one-point methods
call, without the dispatcher) is typed with `real` instead: an instance of float or int (or
of a subclass: np.float64, bool) is unboxed with ``PyFloat_AsDouble`` (OverflowError for an
int beyond floats); anything else raises TypeError, and the API's checked path takes the
call (other NumPy scalars, 0-d arrays and the like give the same numbers there; text, None,
complex and masked values are refused, naming the argument). Inside the machine code it is
a double, like float64; the point kernels' typers (`as_float64`) treat it as float64.
"""

from __future__ import annotations

import ctypes
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
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


def _layout() -> tuple[int, int] | None:
    """Where a PyObject's type and a float's value are (byte offsets: the last field of the
    object header, the float's one field), checked on a live float; None if they are not
    there (then the C API finds them)."""
    pointer = ctypes.sizeof(ctypes.c_void_p)
    kind, value = object.__basicsize__ - pointer, float.__basicsize__ - 8
    probe = 1.0625
    ok = (ctypes.c_void_p.from_address(id(probe) + kind).value == id(float)
          and ctypes.c_double.from_address(id(probe) + value).value == probe)
    return (kind, value) if ok else None


_LAYOUT = _layout()


def _field(builder: Any, obj: Any, offset: int, kind: Any) -> Any:
    address = builder.gep(builder.bitcast(obj, ir.IntType(8).as_pointer()),
                          [ir.Constant(ir.IntType(64), offset)])
    return builder.load(builder.bitcast(address, kind.as_pointer()))


@unbox(Real)
def _unbox_real(typ: Any, obj: Any, c: Any) -> NativeValue:
    builder, api = c.builder, c.pyapi
    floats = api.get_c_object("PyFloat_Type")
    kind = _field(builder, obj, _LAYOUT[0], api.pyobj) if _LAYOUT else api.get_type(obj)
    subtype = api._get_function(ir.FunctionType(ir.IntType(32), [api.pyobj, api.pyobj]),
                                name="PyType_IsSubtype")
    value = cgutils.alloca_once_value(builder, ir.Constant(ir.DoubleType(), 0.0))
    failed = cgutils.alloca_once_value(builder, cgutils.false_bit)
    with builder.if_else(builder.icmp_unsigned("==", kind, floats), likely=True) as (exact, other):
        with exact:  # a float: its value, read in place (PyFloat_AsDouble cannot fail)
            builder.store(_field(builder, obj, _LAYOUT[1], ir.DoubleType()) if _LAYOUT
                          else api.float_as_double(obj), value)
        with other:
            zero = ir.Constant(ir.IntType(32), 0)
            number = builder.or_(*(builder.icmp_signed("!=", builder.call(subtype, [
                kind, api.get_c_object(name)]), zero) for name in ("PyFloat_Type",
                                                                   "PyLong_Type")))
            with builder.if_else(number) as (yes, no):
                with yes:  # an int, or a subclass (np.float64, bool): PyFloat_AsDouble
                    builder.store(api.float_as_double(obj), value)
                    builder.store(api.c_api_error(), failed)  # (an int beyond floats)
                with no:  # anything else: the API's checked path takes it
                    api.err_set_string("PyExc_TypeError", "not a float or an int")
                    builder.store(cgutils.true_bit, failed)
    return NativeValue(builder.load(value), is_error=builder.load(failed))


def as_float64(ty: Any) -> Any:
    """`ty` with `real` read as float64 (the same machine representation): a tuple of reals
    is a tuple of floats to the lowering and to Numba's own front end."""
    if isinstance(ty, types.UniTuple) and isinstance(ty.dtype, Real):
        return types.UniTuple(types.float64, ty.count)
    return ty
