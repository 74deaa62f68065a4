"""Numba's runtime (NRT) started from machine code kept on disk, not compiled in each process.

Before the first kernel of a process runs, cached or not, Numba compiles its runtime's own
functions (NRT_incref, NRT_decref, the atomics they use, NRT_MemInfo_data_fast and the abort
for unresolved symbols: a small LLVM module, `nrtdynmod.create_nrt_module`). That takes
15-45 ms, most of what a second process paid to run a kernel it loads from Numba's cache.
Those functions depend only on Numba, llvmlite and the CPU, so `start_runtime` builds them
once with object caching on (as Numba's cache builds every cached function), keeps their
object code and bitcode in symgraph's cache folder, named by a digest of the Python, Numba and
llvmlite versions and the CPU (the codegen's `magic_tuple`), and later processes load that
(~2 ms), as Numba loads any cached function, its bitcode left unparsed until a compile
links the runtime in (`unserialized_lazily`). The object code of the JIT engine's own empty
module is kept there too (`_engine_module`): the first object an engine loads makes MCJIT
compile that module, with its whole code-generation pipeline built for it (~2 ms of a warm
process that compiles nothing else).

The file carries a digest of its name and contents, checked before use (no pickle: two byte
strings). Any surprise (another Numba without these internals, a damaged file, a failed
load) leaves it to Numba's own `rtsys.initialize`, which compiles them as it always does.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...files import default_cache_dir, write_atomically

_HEADER = b"symgraph-nrt 2\n"  # (2: with the engine module's object code)


def start_runtime(context: Any) -> None:
    """Make Numba's runtime ready for machine code (idempotent; thread-safe), from the kept
    copy when there is one."""
    from numba.core.runtime import rtsys

    if getattr(rtsys, "_init", False):
        return
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        if not getattr(rtsys, "_init", True):
            try:
                _start(rtsys, context)
            except Exception:  # noqa: BLE001 - anything: Numba's own start below
                pass
        rtsys.initialize(context)  # (nothing left to do when `_start` started it)


# -- Numba's LLVM-lock events, made only when someone listens --------------------------------
# Numba registers a callback pair with llvmlite that makes and broadcasts a "numba:llvm_lock"
# event on every llvmlite call (to nobody, unless a compile times itself): ~3 us of the
# ~5.5 us each of the ~460 llvmlite calls of a warm process (its target context, the
# runtime, the kernels' loads) takes, ~1.4 ms. `quiet_llvm_events` puts in its place a pair
# that broadcasts only when a listener is registered: the same events reach the same
# listeners (whoever registers between a call's start and its end gets the end alone, as
# with Numba's own pair).

def quiet_llvm_events() -> bool:
    """Put the listener-checking pair in place of Numba's (once; idempotent); returns
    whether Numba's pair is replaced (False: another Numba, left as it was)."""
    try:
        from llvmlite.binding import ffi
        from numba.core import event

        pairs, registered = ffi.lib._lock._cblist, event._registered
    except (ImportError, AttributeError):
        return False
    kind = "numba:llvm_lock"
    for index, (enter, leave) in enumerate(pairs):
        if getattr(enter, "_sg_quiet", False):
            return True
        if getattr(enter, "__qualname__", "") == "_initialize_llvm_lock_event.<locals>.enter_fn" \
                and getattr(leave, "__qualname__", "").endswith(".<locals>.exit_fn"):
            def entered(enter: Any = enter) -> None:
                if registered.get(kind):  # (a defaultdict: .get makes no entry)
                    enter()

            def leaving(leave: Any = leave) -> None:
                if registered.get(kind):
                    leave()

            entered._sg_quiet = True  # type: ignore[attr-defined]
            pairs[index] = (entered, leaving)  # (one item: no caller sees half a pair)
            return True
    return False


@contextlib.contextmanager
def direct_symbols() -> Iterator[None]:
    """Within: `llvmlite.binding.add_symbol` calls LLVM's own at once (LLVM's symbol table
    takes its own lock), not through llvmlite's lock and its events: Numba's target context
    adds ~290 symbols (its C helpers, the exception types) and the runtime 25, at ~2 us each
    of which ~1.3 the wrapper (0.4 ms of a warm process). Another llvmlite: as it is."""
    import ctypes

    import llvmlite.binding as ll

    usual = ll.add_symbol
    try:
        from llvmlite.binding import ffi

        raw = ffi.lib.LLVMPY_AddSymbol._cfn
    except (ImportError, AttributeError, OSError):
        raw = None
    if raw is None or getattr(usual, "_sg_direct", False):  # (or nested)
        yield
        return

    def add_symbol(name: str, address: int) -> None:
        raw(name.encode("utf-8") if isinstance(name, str) else name, ctypes.c_void_p(address))

    add_symbol._sg_direct = True  # type: ignore[attr-defined]
    ll.add_symbol = add_symbol
    try:
        yield
    finally:
        ll.add_symbol = usual


def target_context() -> Any:
    """Numba's CPU target context, made now if not yet (its symbols added directly)."""
    from numba.core.registry import cpu_target

    with direct_symbols():
        return cpu_target.target_context


def _start(rtsys: Any, context: Any) -> None:
    import llvmlite.binding as ll
    from numba.core import config
    from numba.core.runtime import _nrt_python, nrtdynmod

    codegen = context.codegen()
    path = _path(codegen.magic_tuple())
    kept = _read(path)
    if config.NRT_STATS:  # (as rtsys.initialize does)
        _nrt_python.memsys_enable_stats()
    with direct_symbols():
        for name, address in _nrt_python.c_helpers.items():  # the C half the code calls
            ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
    engine = _engine_module(codegen)  # (the first finalize below compiles or loads it)
    if kept is not None:
        if engine is not None and kept[2]:  # MCJIT loads it: no code-generation pipeline
            engine._compiled_object = kept[2]
        # (its bitcode parsed only when a compile links the runtime in: 1.3 ms a process)
        library = unserialized_lazily(codegen, ("nrt", "object", kept[:2]))
    else:
        module, library = nrtdynmod.create_nrt_module(context)
        library.enable_object_caching()
        library.add_ir_module(module)
        library.finalize()
    if not all(library.get_pointer_to_function(name)
               for name in ("NRT_incref", "NRT_decref", "nrt_unresolved_abort")):
        raise RuntimeError("the runtime's library lacks its functions")
    rtsys._library = library
    rtsys._init = True
    if kept is None:
        name, kind, data = library.serialize_using_object_code()
        if kind == "object":  # (the engine's object: none if something compiled it before)
            _write(path, (*data, engine and engine._compiled_object or b""))


class _EngineModule:
    """Stands for a code library on the engine's own module, for Numba's object cache hooks
    (`CPUCodeLibrary._object_compiled_hook` keeps what MCJIT compiled in `_compiled_object`,
    `_object_getbuffer_hook` hands it to MCJIT instead of compiling)."""

    _object_caching_enabled = True

    def __init__(self) -> None:
        self._compiled, self._compiled_object = False, None


def _engine_module(codegen: Any) -> _EngineModule | None:
    """The stand-in put on `codegen`'s engine module (the empty one its MCJIT engine was
    made with; Numba adds nothing to it), or None if that module is not as expected
    (another Numba: left to be compiled as usual)."""
    module = getattr(codegen, "_llvm_module", None)
    hook = getattr(getattr(codegen, "_library_class", None), "_object_getbuffer_hook", None)
    if module is None or getattr(hook, "__qualname__", "") != (
            "CPUCodeLibrary._object_getbuffer_hook"):
        return None
    if not hasattr(module, "_CPUCodeLibrary__library"):  # (the hooks' name for it)
        if list(module.functions) or list(module.global_variables):
            return None
        module._CPUCodeLibrary__library = _EngineModule()
    stand_in = module._CPUCodeLibrary__library
    return stand_in if isinstance(stand_in, _EngineModule) else None


def _path(magic: tuple) -> Path:
    import llvmlite
    import numba

    about = repr((sys.version, numba.__version__, llvmlite.__version__, magic))
    return default_cache_dir() / f"nrt-{hashlib.sha256(about.encode()).hexdigest()[:32]}.bin"


def _digest(path: Path, body: bytes) -> bytes:
    return hashlib.sha256(path.name.encode() + b"\0" + body).digest()


def _read(path: Path) -> tuple[bytes, bytes, bytes] | None:
    """(object code, bitcode, the engine module's object code or b"") kept at `path`, or None
    (missing, damaged, another file's)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    start = len(_HEADER) + 32
    body = data[start:]
    if not data.startswith(_HEADER) or data[len(_HEADER):start] != _digest(path, body) or (
            len(body) < 24):
        return None
    size, rest, engine = struct.unpack_from("<QQQ", body)
    if 24 + size + rest + engine != len(body):
        return None
    return body[24:24 + size], body[24 + size:24 + size + rest], body[24 + size + rest:]


def _write(path: Path, data: tuple[bytes, bytes, bytes]) -> None:
    code, bitcode, engine = data
    body = struct.pack("<QQQ", len(code), len(bitcode), len(engine)) + bytes(code) + bytes(
        bitcode) + bytes(engine)
    try:
        write_atomically(path, _HEADER + _digest(path, body) + body, sync=False)
    except OSError:  # only the next process's saving lost
        pass


# -- cached kernels without parsing their bitcode --------------------------------------------
# Numba keeps a cached function as its object code plus its LLVM bitcode, and parses the
# bitcode on every load: it is there to be linked into functions compiled later that call
# this one, and to list the symbols the object defines. For a kernel nothing else calls, that
# parse is most of the load (2-20 ms for a 1,000-operation kernel, 40-90 ms for the tape's
# interpreter). `unserialized_lazily` loads the object code alone; the bitcode is parsed when
# something asks for the module (a later compile that links the kernel in) or a symbol the
# engine does not find.

@functools.cache
def _lazy_class(base: type) -> type:
    import llvmlite.binding as ll

    class LazyLibrary(base):  # type: ignore[misc, valid-type]
        """A Numba code library loaded from object code, its bitcode parsed on first use."""

        @property
        def _shared_module(self) -> Any:
            module = self.__dict__.get("_sg_module")
            if module is None and self.__dict__.get("_sg_bitcode") is not None:
                module = self.__dict__["_sg_module"] = ll.parse_bitcode(
                    self.__dict__.pop("_sg_bitcode"))
                self._codegen._engine._load_defined_symbols(module)
            return module

        @_shared_module.setter
        def _shared_module(self, module: Any) -> None:
            self.__dict__["_sg_module"] = module

        def get_pointer_to_function(self, name: str) -> int:
            self._ensure_finalized()
            engine = self._codegen._engine
            if not engine.is_symbol_defined(name):
                address = engine.get_function_address(name)
                if address:
                    return address
                self._shared_module  # noqa: B018 - its symbols, then as Numba looks
            return super().get_pointer_to_function(name)

    return LazyLibrary


def unserialized_lazily(codegen: Any, state: tuple) -> Any:
    """`codegen.unserialize_library(state)` for object code, without parsing its bitcode."""
    name, kind, data = state
    if kind != "object":
        return codegen.unserialize_library(state)
    object_code, bitcode = data
    library = codegen.create_library(name)
    library.__class__ = _lazy_class(type(library))
    library.__dict__.pop("_shared_module", None)  # (the property stands in for it)
    library.__dict__["_sg_bitcode"] = bitcode
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library._finalize_final_module()  # an empty module: the engine takes the object code
    return library


@contextlib.contextmanager
def lazy_libraries(codegen: Any) -> Iterator[None]:
    """Within: `codegen` loads cached object code with `unserialized_lazily` (hold Numba's
    compiler lock: every load and compile takes it, so no other thread sees the change)."""
    if "unserialize_library" in vars(codegen):  # (nested)
        yield
        return
    codegen.unserialize_library = functools.partial(_unserialize, codegen)
    try:
        yield
    finally:
        del codegen.unserialize_library


def _unserialize(codegen: Any, state: tuple) -> Any:
    try:
        return unserialized_lazily(codegen, state)
    except Exception:  # noqa: BLE001 - another Numba's internals: its own way
        return type(codegen).unserialize_library(codegen, state)
