"""The backends, one `Backend` record each, and the module source for programs (what `compile`
loads and `symgraph codegen` prints).

A record says what the rest of symgraph may assume of a backend's kernels, so that nothing
else tests backend names: a new backend is a new record (its emitter, its loader, what its
kernels can do).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from ..ir.node import Node
from ..lower import naming
from ..lower.products import Product
from ..lower.programs import build_programs, describe
from ..lower.schedule import Program
from ..version import __version__
from .numba.cache import dispatchers_of, load_on_first_call
from .numba.cache_files import checked
from .numba.emit import emit_numba, emit_numba_standalone
from .python import emit_python

STRAIGHT, TAPE = "straight", "tape"  # strategies: a straight-line module, or the tape


@dataclass(frozen=True)
class Backend:
    """A backend: how its kernels are made and loaded, and what they can do.

    ``emit(programs, title, description, input_labels, version)`` writes the module source
    (``NAME_row(x, out)``, ``NAME_batch(X, OUT)`` per program); once the module is imported,
    ``load(module)`` makes its kernels ready to call. The flags are promises about the
    straight-line module's kernels, which the API's fast paths and batching rely on.
    """

    name: str
    emit: Callable[..., str]
    load: Callable[[ModuleType], None]
    strategies: tuple[str, ...]  # STRAIGHT (the emitted module), TAPE (Numba's interpreter)
    threaded_batches: bool = False  # batch kernels release the GIL: threads share a batch
    chunk_kernels: bool = False  # NAME_chunks(X, OUT, claims): threads claim chunks of a batch
    rows_in_place: bool = False  # row kernels read every input first: x may be out
    lane_tapes: bool = False  # batches of big call-heavy programs may run on the tape's lanes
    # strategy "auto" runs first calls on the Python backend's module, compiling when it pays
    interpret_first: bool = False
    # batch kernels are NumPy whole-array code: run in blocks of rows (runtime.blocks)
    numpy_batches: bool = False
    about: str = ""
    # The module for `symgraph codegen --standalone`: needs no symgraph to run (None: `emit`'s
    # module already needs none).
    emit_standalone: Callable[..., str] | None = None
    # Called before the module is imported (None: nothing to do).
    prepare: Callable[[], None] | None = None
    # Suffixes of the module's functions that its kernels read as text, never run as Python
    # unless called: their bytecode is read on their first call (backends.lazy_code).
    lazy_bodies: tuple[str, ...] = ()

    def strategy(self, asked: str) -> str | None:
        """`asked` checked against this backend's strategies; None for "auto" when there is
        a choice to make (by program size: backends.tape.builder.choose_strategy)."""
        if asked == "auto":
            return self.strategies[0] if len(self.strategies) == 1 else None
        if asked not in self.strategies:
            raise ValueError(f"unknown strategy {asked!r} for backend {self.name!r}; choose "
                             f"one of {['auto', *self.strategies]}")
        return asked


def _load_numba(module: ModuleType) -> None:
    # The entry points' cached machine code, without Numba's per-process set-up, read when
    # each is first called (kernels of products never called are never read).
    kernels = dispatchers_of(module)
    checked(kernels)  # every kernel's cache files: damaged ones compile again
    if kernels:  # (kept from a process that compiled: the next one loads it)
        from .numba.runtime.startup import start_runtime

        start_runtime(kernels[0].targetctx)
    load_on_first_call(dispatchers_of(module, ("_row", "_chunks", "_point")))


def _prepare_numba() -> None:
    """Numba's dispatcher and cache modules imported before a generated module is, so that
    the import's `folders_checked_once` finds them: a process that had not imported Numba
    defined every kernel with Numba's own cache set-up (~0.4 ms a kernel). And Numba's
    target context, which the module's first kernel would make (`startup.target_context`)."""
    import numba.core.caching  # noqa: F401
    import numba.core.dispatcher  # noqa: F401

    from .numba.runtime.startup import target_context

    target_context()  # (what the module's first kernel makes: its symbols added directly)


def _load_python(module: ModuleType) -> None:
    """Plain functions: nothing to prepare."""


BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("numba", emit_numba, _load_numba, (STRAIGHT, TAPE), threaded_batches=True,
            chunk_kernels=True, rows_in_place=True, lane_tapes=True, interpret_first=True,
            about="@njit kernels (cached machine code), or the tape for huge programs",
            emit_standalone=emit_numba_standalone, prepare=_prepare_numba,
            lazy_bodies=("_steps", "_lanes")),
    Backend("python", emit_python, _load_python, (STRAIGHT,), numpy_batches=True,
            about="math per point, NumPy per batch: no JIT wait"),
)}


def backend_named(name: str) -> Backend:
    """The record of backend `name`; a ValueError naming the choices for an unknown one."""
    backend = BACKENDS.get(name) if isinstance(name, str) else None
    if backend is None:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(BACKENDS)}")
    return backend


def render_source(programs: Sequence[Program], outputs: Sequence[Node], inputs: Sequence[Node],
                  backend: str | Backend, labels: Sequence[str] | None = None,
                  standalone: bool = False, described: bool = True) -> str:
    """The source of a kernel module: the one `compile` loads (Numba's imports symgraph's Numba
    runtime), or with `standalone` one that imports only math, NumPy and Numba's public API.
    Without `described` the docstring names the steps instead of printing the formula (the
    interpreter's module: printing is most of a small build)."""
    if not isinstance(backend, Backend):
        backend = backend_named(backend)
    labels = list(labels) if labels else naming.value_labels(len(outputs))
    names = [a.value for a in inputs]
    kind = "Value and derivatives of " if len(programs) > 1 else "Value of "
    title = kind + ", ".join(labels) + f"({', '.join(names)})"
    emit = (backend.emit_standalone or backend.emit) if standalone else backend.emit
    description = describe(outputs, labels) if described else [
        f"{label} = (see the steps below)" for label in labels]
    return emit(programs, title, description, names, __version__)


def generate_source(outputs: Sequence[Node], inputs: Sequence[Node], wrt: Sequence[Node], *,
                    backend: str | Backend, products: Sequence[Product],
                    labels: Sequence[str] | None = None, standalone: bool = False
                    ) -> tuple[str, list[Program]]:
    """Programs for `outputs` (one per product) and the module source that runs them."""
    programs = build_programs(outputs, inputs, wrt, products=products)
    return render_source(programs, outputs, inputs, backend, labels, standalone), programs
