"""symgraph's Numba runtime: what a generated Numba module imports to compile its kernels.

A generated module (symgraph.backends.numba.emit) holds only the user's math, as plain Python
functions, and one import line (plus one for the vecmath functions its lane code calls)::

    from symgraph.backends.numba.runtime import fetch_add, lane_loops, load_acquire, straight_line

``_NAME_steps = straight_line(NAME_steps)`` is what the jitted ``NAME_row`` calls: the steps
lowered one by one (`lowering`), a tenth of Numba's compile time for the same machine code;
``point_line(NAME_steps)`` the same steps for ``NAME_point`` (a point as a tuple of floats,
the value returned, the gradient into an array: what the API's one-point calls run), and
``floats_line(NAME_steps, k)`` for ``NAME_floats`` (the value and the k gradient entries
returned as floats, no array; `fastcall` emits its own CPython entry, which is
``fn.value_and_grad_floats``); their compiled entry points take
`real` numbers (``real``: unboxed like ``float()`` of a number, never parsing text).
``_NAME_lanes = lane_loops(NAME_lanes, NAME_steps, ...)`` runs a lane kernel's loops on a
chunk of a batch (`lanes`); `fetch_add` and `load_acquire` are the atomic claims with which
threads share a batch (`claims`).

This package is the one adapter to Numba's internals (its target and typing contexts,
numba.core.cgutils, numba.extending.intrinsic, llvmlite's IR builder); nothing else that
symgraph generates or exports touches them. It checks itself before use:

* at import, that every internal it calls exists (`missing`);
* at the first compile through it in a process, that tiny kernels (`probe`) lowered by it
  give the bits of plain ``@njit`` and NumPy (`check`; once per runtime, Numba and llvmlite:
  a passed probe is remembered; a cache hit compiles nothing and checks nothing).

The lowering's own modules (`lowering`, `lanes`, `sums`, and through them the special
functions) are imported by the typers, when Numba compiles: a process whose kernels all come
from Numba's cache imports only this adapter, `real` and `claims` (1.2-1.7 ms of CPU, against
2-5 ms with all of them, load ~3), and `fastcall` when ``fn.value_and_grad_floats`` binds the
entry emitted beside a floats kernel (ctypes and llvmlite's IR classes: loaded by `real`).

When a check fails, a warning says why, and kernels compile with Numba's public API instead
(`plain`): the same numbers, compiles up to ten times slower, batches row by row (and on one
thread when the claims are not atomic, `ATOMIC`).

Numba's on-disk cache checks only the file a function is written in, so a generated module's
cached machine code would outlive a change of this package. Each generated module therefore
names `symgraph.backends.numba.cache.runtime_digest` in its header: a new runtime is new
source text, hence a new file (runtime.loading names files by their text's digest).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from numba import types

from ...lazy_code import unstubbed
from . import plain
from .real import as_float64, real  # noqa: F401 - real: the point kernels' argument type
from .startup import quiet_llvm_events

quiet_llvm_events()  # (before a generated module's kernels make Numba's target context)

# Every internal the lowering, the lanes and the claims use: (module, attribute path).
_INTERNALS = [("numba.extending", "intrinsic")] + [
    ("numba.core.cgutils", name) for name in (
        "get_item_pointer", "alloca_once", "alloca_once_value", "unpack_tuple",
        "for_range_slice", "for_range", "if_unlikely", "is_not_null")] + [
    ("numba.core.pythonapi", f"PythonAPI.{name}") for name in (
        "float_as_double", "c_api_error", "get_type", "get_c_object", "err_set_string",
        "_get_function", "tuple_getitem", "tuple_new", "tuple_setitem", "float_from_double",
        "err_occurred", "err_clear", "decref")] + [
    ("numba.core.callconv", "CPUCallConv.call_function")] + [
    ("numba.core.base", f"BaseContext.{name}") for name in (
        "make_array", "get_constant", "cast", "get_function", "make_tuple", "unpack_value",
        "pack_value", "get_value_type", "get_data_type", "get_dummy_value",
        "compile_internal", "get_python_api", "get_argument_type")] + [
    ("numba.core.typing.context", f"BaseContext.{name}") for name in (
        "resolve_value_type", "resolve_function_type", "unify_types")] + [
    ("llvmlite.ir", f"IRBuilder.{name}") for name in (
        "select", "bitcast", "or_", "and_", "mul", "add", "sub", "icmp_signed", "gep",
        "atomic_rmw", "load_atomic", "call", "ret_void", "cbranch", "phi", "extract_value",
        "icmp_unsigned", "position_at_end", "goto_block")] + [
    ("llvmlite.ir", name) for name in ("Function", "FunctionType", "VoidType")]


def missing() -> list[str]:
    """The internals the runtime needs that this Numba lacks (empty when all are there)."""
    gone = []
    for module, path in _INTERNALS:
        try:
            value: Any = importlib.import_module(module)
            for name in path.split("."):
                value = getattr(value, name)
        except (ImportError, AttributeError):
            gone.append(f"{module}.{path}")
    return gone


def _fall_back(reason: str) -> None:
    _warned.append(reason)
    warnings.warn(f"symgraph's Numba runtime cannot use this Numba ({reason}); kernels compile "
                  "with plain numba.njit: the same numbers, slower compiles, batches row by row",
                  RuntimeWarning, stacklevel=3)


_warned: list[str] = []  # why the runtime fell back, once said
_GONE = missing()
LOWERED = not _GONE  # kernels compile through the lowering (else through `plain`)
ATOMIC = LOWERED  # claims are atomic: threads may share a batch
if LOWERED:  # (the lowering's modules are imported by the typers, when Numba compiles: a
    # process that loads every kernel from the cache never needs them)
    from numba.extending import intrinsic

    from .claims import fetch_add, load_acquire

    @intrinsic
    def tile(typingctx, A, a0, a1, B, b0, b1):
        """``B[b0 + c, b1 + r] = A[a0 + r, a1 + c]`` for r, c < 8 (`tiles`)."""
        from .tiles import tile_typer

        return tile_typer(A, a0, a1, B, b0, b1)
else:  # said at first use (`_plain`), where a warning reaches whoever compiles
    fetch_add, load_acquire = plain.claims()
    tile = plain.tile()


def _plain() -> bool:
    """Whether kernels compile through `plain` (an internal is missing); warns once."""
    if not LOWERED and not _warned:
        _fall_back("it lacks " + ", ".join(_GONE))
    return not LOWERED


_verdict: list[bool] = []  # the probe's verdict, once it ran


def check() -> bool:
    """Whether the lowering gives the reference bits on the probe kernels. Runs the probe on
    its first call in a process (from a typer, while Numba compiles: under its compiler lock)
    unless it passed before with this runtime, Numba and llvmlite (`verdict_stamps`)."""
    if not _verdict:
        _verdict.append(True)  # while the probe compiles, its own typers lower as usual
        stamps = verdict_stamps()
        if any(stamp.is_file() for stamp in stamps):
            return True
        try:
            from . import probe

            problem = probe.problem()
        except Exception as error:  # noqa: BLE001 - any failure of an internal: fall back
            problem = f"{type(error).__name__}: {error}"
        if problem:
            _verdict[0] = False
            _fall_back(f"its check failed: {problem}")
        else:
            _remember(stamps)
    return _verdict[0]


def verdict_stamps() -> list[Path]:
    """Where a passed probe is remembered, named after what its verdict depends on: beside the
    runtime's bytecode, else in the user's cache folder."""
    import llvmlite
    import numba

    from ..cache import runtime_digest

    key = (f"{runtime_digest()} numba {numba.__version__} llvmlite {llvmlite.__version__} "
           f"python {sys.version_info[0]}.{sys.version_info[1]}")
    name = f"probe-passed-{hashlib.sha256(key.encode()).hexdigest()[:24]}"
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "symgraph"
    return [Path(__file__).resolve().parent / "__pycache__" / name, user / name]


def _remember(stamps: list[Path]) -> None:
    for stamp in stamps:
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.touch()
            return
        except OSError:  # read-only: the next place
            continue


def _compiled(function: Callable) -> Callable:
    """Code that runs `function` (plain Python) compiled by Numba's front end: the intrinsics'
    way out when the probe fails after their typing began (`real` read as float64)."""
    def codegen(context, builder, signature, args):
        floats = signature.return_type(*(as_float64(a) for a in signature.args))
        return context.compile_internal(builder, unstubbed(function), floats, args)

    return codegen


def straight_line(steps: Callable) -> Any:
    """What ``NAME_row`` calls for ``NAME_steps(_x, _out)``: an intrinsic (x, out) -> None that
    runs its assignments (read from its file only when Numba compiles)."""
    if _plain():
        return plain.steps_kernel(steps)

    def typer(typingctx, x, out):
        if isinstance(x, types.Array) and isinstance(out, types.Array) and x.ndim == 1 == out.ndim:
            if not check():
                return types.void(x, out), _compiled(steps)
            from . import lowering as _lowering

            body = _lowering.steps_body(steps)
            return types.void(x, out), lambda *lowering: _lowering.lower(body, *lowering)
        return None

    typer.__name__ = steps.__name__
    return intrinsic(typer)


def point_line(steps: Callable, packs: tuple = ()) -> Any:
    """What ``NAME_point`` calls for ``NAME_steps(_x, _out)``: an intrinsic (x, g) -> float64
    for x a tuple of floats or a 1-D array, returning ``_out[0]`` and storing ``_out[k]`` in
    ``g[k - 1]`` (g None: a program of one output). `packs` (backends.numba.packs): the
    steps' calls computed SIMD lanes at a time (the plain fallback calls libm)."""
    if _plain():
        return plain.point_kernel(steps)

    def typer(typingctx, x, g):
        point = (isinstance(x, types.UniTuple) and as_float64(x).dtype == types.float64) or (
            isinstance(x, types.Array) and x.ndim == 1)
        if point and (g == types.none or (isinstance(g, types.Array) and g.ndim == 1)):
            if not check():
                return types.float64(x, g), _compiled(plain.point_python(steps))
            from . import lowering as _lowering

            body = _lowering.steps_body(steps)
            return types.float64(x, g), lambda *lowering: _lowering.lower_point(
                body, *lowering, packs=packs)
        return None

    typer.__name__ = steps.__name__
    return intrinsic(typer)


def floats_line(steps: Callable, count: int, packs: tuple = ()) -> Any:
    """What ``NAME_floats`` calls for ``NAME_steps(_x, _out)``: an intrinsic x -> (value,
    (g0, ..., g_{count-1})) for x a tuple of floats (or of `real`): ``_out[0]`` and a tuple of
    ``_out[1]`` .. ``_out[count]``, all in registers (no array); `packs` as `point_line`'s."""
    if _plain():
        return plain.floats_kernel(steps, count)
    result = types.Tuple((types.float64, types.UniTuple(types.float64, count)))

    def typer(typingctx, x):
        if isinstance(x, types.UniTuple) and as_float64(x).dtype == types.float64:
            if not check():
                return result(x), _compiled(plain.floats_python(steps, count))
            from . import lowering as _lowering

            body = _lowering.steps_body(steps)
            return result(x), lambda *lowering: _lowering.lower_floats(body, count, *lowering,
                                                                       packs=packs)
        return None

    typer.__name__ = steps.__name__
    return intrinsic(typer)


def lane_loops(lanes: Callable, steps: Callable, slots: int, block: int, chunk: int,
               widths: dict[str, int], interleave: tuple[int, ...] = (),
               parts: tuple[int, ...] = (), calls: tuple[int, ...] = ()) -> Any:
    """What ``NAME_chunks`` calls for chunk c: an intrinsic (X, OUT, c) -> None that runs the
    function `lanes` on each block of `block` points of chunk c (points c*chunk ..
    c*chunk + chunk - 1), its loops over _j as loops in LLVM IR (which LLVM vectorises), its
    _T as `slots` floats and its _F as `block` flags on the stack. A loop of
    ``if _F[_j]: NAME_steps(_X[_s + _j], _OUT[_s + _j])`` runs `steps` (whatever the name
    called) for the points flagged. `widths` maps "_X" and "_OUT" to their rows' lengths when
    these are small enough to address with constants (C-contiguous arrays of that many
    columns, which the caller checks): LLVM then vectorises the loops that read and write them
    (interleaved loads and stores), which it cannot do with the arrays' own strides. The
    loops numbered in `interleave` (for-loops of `lanes`, from 0) run a whole block as its two
    halves at once (`lanes._halves`): the same bits. The loops numbered in `parts` start
    functions of their own, called in turn on each block (`lanes._part`: a big kernel compiles
    as several small ones); those in `calls` (a vecmath step's) call a function that the
    kernel's loops of one shape share (`lanes._shared`: LLVM optimises a vecmath body once,
    not once per step). Without the lowering: `steps` on each row of the chunk."""
    if _plain():
        return plain.rows_kernel(steps, chunk)

    def typer(typingctx, x, out, c):
        if (isinstance(x, types.Array) and isinstance(out, types.Array) and x.ndim == 2 == out.ndim
                and isinstance(c, types.Integer)):
            if not check():
                return types.void(x, out, c), _compiled(plain.rows_python(steps, chunk))
            from . import lanes as _lanes
            from . import lowering as _lowering

            loops, fixup = _lowering.steps_body(lanes), _lowering.steps_body(steps)
            layouts = {"_X": x.layout, "_OUT": out.layout}
            constant = {name: width for name, width in widths.items() if layouts[name] == "C"}
            return types.void(x, out, c), lambda *lowering: _lanes.lower_lanes(
                loops, fixup, slots, block, chunk, constant, interleave, *lowering, parts=parts,
                calls=calls)
        return None

    typer.__name__ = lanes.__name__
    return intrinsic(typer)


def lane_sums(lanes: Callable, slots: int, block: int, chunk: int, width: int,
              columns: tuple[int, ...]) -> Any:
    """What ``NAME_reduce`` calls for chunk c: an intrinsic (P, D, ACC, c) -> None, D the tuple
    of data arrays, that runs the loops of `lanes` (backends.numba.reduce) on each block of
    `block` rows of chunk c (rows c*chunk .. c*chunk + chunk - 1) as loops in LLVM IR, with
    `slots` floats of scratch ``_T`` and ``width * block`` accumulators ``_A`` on the stack,
    and stores each output slot's sum of the chunk's rows in ACC[c] (`sums`). `columns` are
    the data arrays' row lengths (constant strides for C-contiguous ones). Without the
    lowering: the same loops, compiled by Numba (`plain.sums_kernel`)."""
    if _plain():
        return plain.sums_kernel(lanes, slots, block, chunk, width)

    def typer(typingctx, p, d, acc, c):
        if (isinstance(p, types.Array) and isinstance(d, types.BaseTuple)
                and all(isinstance(a, types.Array) and a.ndim == 2 for a in d)
                and isinstance(acc, types.Array) and acc.ndim == 2
                and isinstance(c, types.Integer)):
            if not check():
                return types.void(p, d, acc, c), _compiled(
                    plain.sums_python(lanes, slots, block, chunk, width))
            from . import lowering as _lowering
            from . import sums as _sums

            body = _lowering.steps_body(lanes)
            return types.void(p, d, acc, c), lambda *lowering: _sums.lower_sums(
                body, slots, block, chunk, width, columns, *lowering)
        return None

    typer.__name__ = lanes.__name__
    return intrinsic(typer)
