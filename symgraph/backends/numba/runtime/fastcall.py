"""A floats kernel's own CPython entry: ``fn.value_and_grad_floats`` with no Python frame.

Numba's entry point of ``NAME_floats`` refuses what is not a float or an int with its own
TypeError, so the API put it behind a Python function with one try/except, whose frame cost
55-65 ns a call (a third of the call at ~10 operations). `add_fastcall` emits, beside the
kernel's machine code (so Numba's cache keeps it), a function with CPython's ``METH_FASTCALL``
signature: ``(self, args, nargs)``. It reads each argument in place when it is exactly a float,
with ``PyFloat_AsDouble`` when it is an int or a subclass of float or int (as `real` reads it),
calls the kernel and returns ``(value, (g0, ...))``. Anything else (a wrong count, text, None,
an int beyond floats, a failing kernel) goes, untouched, to ``self[0]``: the API's checked
path, which gives the same numbers or the error naming the argument. `method` makes the
Python callable of it with the C API's ``PyCFunction_NewEx``.
"""

from __future__ import annotations

import ctypes
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils

from .real import _LAYOUT, _field

PREFIX = "symgraph_fastcall."
_METH_FASTCALL = 0x80


def add_fastcall(context: Any, builder: Any, count: int, result: Any) -> None:
    """Emit ``PREFIX + name`` for the function being lowered (a floats kernel of `count` real
    arguments returning `result`), if it has that native signature."""
    kernel = builder.function
    returned, doubles = kernel.function_type.args[0], kernel.function_type.args[2:]
    if (len(doubles) != count or any(not isinstance(t, ir.DoubleType) for t in doubles)
            or returned != context.call_conv.get_return_type(result)):
        return  # (lowered into another function than NAME_floats: no entry of its own)
    module = builder.module
    name = PREFIX + kernel.name
    if name in module.globals:
        return
    pyobj = context.get_argument_type(types.pyobject)
    fnty = ir.FunctionType(pyobj, [pyobj, pyobj.as_pointer(), ir.IntType(64)])
    wrapper = ir.Function(module, fnty, name)
    owner, args, nargs = wrapper.args
    b = ir.IRBuilder(wrapper.append_basic_block("entry"))
    api = context.get_python_api(b)
    slow = wrapper.append_basic_block("slow")
    with b.goto_block(slow):  # the checked path: self[0](*args)
        vectorcall = api._get_function(ir.FunctionType(pyobj, [
            pyobj, pyobj.as_pointer(), ir.IntType(64), pyobj]), name="PyObject_Vectorcall")
        b.ret(b.call(vectorcall, [api.tuple_getitem(owner, 0), args, nargs,
                                  ir.Constant(pyobj, None)]))
    # (PY_VECTORCALL_ARGUMENTS_OFFSET may be set in nargs' top bit: the count is the rest)
    n = b.and_(nargs, ir.Constant(ir.IntType(64), (1 << 63) - 1))
    b.cbranch(b.icmp_unsigned("==", n, ir.Constant(ir.IntType(64), count)),
              wrapper.append_basic_block("count ok"), slow)
    b.position_at_end(wrapper.blocks[-1])
    floats = api.get_c_object("PyFloat_Type")
    values = [_argument(b, api, b.load(b.gep(args, [ir.Constant(ir.IntType(64), i)])),
                        floats, slow, wrapper) for i in range(count)]
    status, out = context.call_conv.call_function(b, kernel, result, (types.float64,) * count,
                                                  values)
    done = wrapper.append_basic_block("done")
    b.cbranch(status.is_ok, done, slow)
    b.position_at_end(done)
    value, gradient = b.extract_value(out, 0), b.extract_value(out, 1)
    k = result.types[1].count
    items = [api.float_from_double(v) for v in
             [value, *(b.extract_value(gradient, i) for i in range(k))]]
    both, inner = api.tuple_new(2), api.tuple_new(k)
    made = cgutils.is_not_null(b, both)
    for item in (inner, *items):
        made = b.and_(made, cgutils.is_not_null(b, item))
    with b.if_then(b.not_(made), likely=False):  # out of memory (MemoryError is set)
        for item in (both, inner, *items):
            api.decref(item)  # (Py_DecRef: NULL is fine)
        b.ret(ir.Constant(pyobj, None))
    for whole, i, item in [(both, 0, items[0]), (both, 1, inner),
                           *((inner, i, item) for i, item in enumerate(items[1:]))]:
        _set_item(b, api, whole, i, item)  # (each takes the item's reference)
    b.ret(both)

_POINTER = ctypes.sizeof(ctypes.c_void_p)


def _items() -> int | None:
    """Where a tuple's items start (a byte offset, checked on a live tuple), or None."""
    pointer = _POINTER
    probe = (object(), object())
    start = tuple.__basicsize__
    ok = all(ctypes.c_void_p.from_address(id(probe) + start + i * pointer).value == id(item)
             for i, item in enumerate(probe))
    return start if ok and tuple.__itemsize__ == pointer else None


_ITEMS = _items()


def _set_item(b: Any, api: Any, whole: Any, i: int, item: Any) -> None:
    """PyTuple_SET_ITEM: the store itself into a new tuple (PyTuple_SetItem's checks and call
    cost 3-4 ns an item), where the layout is known."""
    if _ITEMS is None:
        api.tuple_setitem(whole, i, item)
        return
    address = b.gep(b.bitcast(whole, ir.IntType(8).as_pointer()),
                    [ir.Constant(ir.IntType(64), _ITEMS + _POINTER * i)])
    b.store(item, b.bitcast(address, api.pyobj.as_pointer()))


def _argument(b: Any, api: Any, obj: Any, floats: Any, slow: Any, wrapper: Any) -> Any:
    """The double of `obj` if it is a float or an int (or of a subclass), else to `slow`."""
    kind = _field(b, obj, _LAYOUT[0], api.pyobj) if _LAYOUT else api.get_type(obj)
    exact, other, next_ = (wrapper.append_basic_block(s) for s in ("exact", "other", "next"))
    b.cbranch(b.icmp_unsigned("==", kind, floats), exact, other)
    b.position_at_end(exact)
    in_place = (_field(b, obj, _LAYOUT[1], ir.DoubleType()) if _LAYOUT
                else api.float_as_double(obj))
    b.branch(next_)
    b.position_at_end(other)
    subtype = api._get_function(ir.FunctionType(ir.IntType(32), [api.pyobj, api.pyobj]),
                                name="PyType_IsSubtype")
    zero = ir.Constant(ir.IntType(32), 0)
    number = b.or_(*(b.icmp_signed("!=", b.call(subtype, [kind, api.get_c_object(name)]), zero)
                     for name in ("PyFloat_Type", "PyLong_Type")))
    read = wrapper.append_basic_block("read")
    b.cbranch(number, read, slow)
    b.position_at_end(read)
    converted = api.float_as_double(obj)
    failed = wrapper.append_basic_block("failed")
    b.cbranch(cgutils.is_not_null(b, api.err_occurred()), failed, next_)
    read_end = b.block
    b.position_at_end(failed)  # an int beyond floats: the checked path says so
    api.err_clear()
    b.branch(slow)
    b.position_at_end(next_)
    value = b.phi(ir.DoubleType())
    value.add_incoming(in_place, exact)
    value.add_incoming(converted, read_end)
    return value


class _Def(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


_new = ctypes.pythonapi.PyCFunction_NewEx
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                  ctypes.py_object]


class FloatsEntry(tuple):
    """The method's self: (its checked path, its definition, the owner of its code)."""

    __slots__ = ()


def method(address: int, slow: Any, keep: Any, name: str, doc: str) -> Any:
    """The builtin function of the entry at `address`, `slow` its checked path; `keep` (the
    code's owner) lives as long as it does."""
    definition = _Def(name.encode(), address, _METH_FASTCALL, doc.encode())
    owner = FloatsEntry((slow, definition, keep))  # (the definition is read at every call)
    return _new(ctypes.addressof(definition), owner, None)
