"""Building a compiled function's kernels: the cache lookup, the programs, the strategy, the
module (or tapes) and its batch runners. api.py only calls what `build` returns.

    built = build(outputs, args, wrt, backend=BACKENDS["numba"], products=[VALUE, VALUE_GRAD])
    built.rows["value_grad"](x, out)          # one point
    built.threaded["value_grad"](X, OUT)      # a batch, on as many threads as it is worth

What a backend's kernels can do comes from its record (backends.registry.Backend), never from
its name. The expression cache keeps the programs, the strategy and the choices made for the
batches, so building again reads them back instead of differentiating.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.imports import text_of
from ..backends.numba.cache import Entry
from ..backends.registry import STRAIGHT, TAPE, Backend, render_source
from ..ir.node import Node
from ..ir.traversal import bulk
from ..lower.products import Product
from ..lower.programs import build_programs
from ..lower.schedule import Program
from .batching import rows_per_thread, run_batch, run_shared
from .blocks import run_blocks
from .expression_cache import expression_key, load_programs, load_tape, save_programs, save_tape
from .loading import cache_dir_of, kept_file, load_kept, load_source

Kernel = Callable[[np.ndarray, np.ndarray], None]
_CHUNK_TYPES = (np.empty((0, 0)), np.empty((0, 0)), np.zeros(2, np.int64))  # X, OUT, claims


def _usable(kept: tuple[list[Program], dict] | None, products: Sequence[Product],
            strategies: Sequence[str]) -> bool:
    """Whether a record read back describes what `build` makes: one program per product, a
    strategy the backend has, and lists of program names (a record can parse and still be
    none of these)."""
    if kept is None:
        return False
    programs, record = kept
    names = [p.name for p in programs]
    on_tape = record.get("on_tape", [])
    return (sorted(names) == sorted(p.name for p in products)
            and record.get("strategy") in strategies
            and isinstance(on_tape, list) and all(name in names for name in on_tape))


class Build:
    """The kernels of one compiled function: per program (by product name) ``rows[name](x,
    out)``, ``batches[name](X, OUT)`` on the calling thread and ``threaded[name](X, OUT)``
    shared between threads where the backend allows. ``rows_in_place``: a row kernel may take
    x and out as one array."""

    def __init__(self, backend: Backend, strategy: str, products: Sequence[Product],
                 programs: list[Program], module: Any, path: Path | None, source: str | None,
                 folder: Path, key: str) -> None:
        self.backend, self.strategy, self.products = backend, strategy, tuple(products)
        self.programs, self.module, self.path = programs, module, path
        self._source, self._folder, self._key = source, folder, key
        self.rows_in_place = backend.rows_in_place and strategy == STRAIGHT
        self.rows = {p.name: getattr(module, p.name + "_row") for p in programs}
        self.batches: dict[str, Kernel] = {p.name: getattr(module, p.name + "_batch")
                                           for p in programs}
        if backend.numpy_batches:
            self.batches = {p.name: _in_blocks(self.batches[p.name], p.op_count)
                            for p in programs}
        self.on_tape: list[Program] = []
        self._batch_tapes: Any = None
        self.threaded: dict[str, Kernel] = self.batches

    made = True  # (a Deferred is not, until its switch)

    def straight(self) -> Build:
        """Itself: its kernels are the compiled ones (as `Deferred.straight`'s)."""
        return self

    @property
    def source(self) -> str:
        """The generated module's text, or the tape printed as readable steps (on first use:
        a 10^5-step tape takes a while to print)."""
        if self.strategy != STRAIGHT:
            return self.module.source
        if self._source is None:  # (imported from its kept bytecode: read now, checked)
            self._source = text_of(self.module)
        return self._source

    @property
    def batch_tapes(self) -> Any:
        """The TapeModule running the batches of programs chosen for the tape's lanes (None if
        there are none), built on the first batch: one-point users never pay for it."""
        if self._batch_tapes is None and self.on_tape:
            self._batch_tapes = tape_module(self._folder, self._key, self.on_tape)
        return self._batch_tapes

    def _run_on_tape(self, on_tape: list[str] | None) -> None:
        """Batches of straight-line programs too big for lane kernels, and heavy in
        exp/log/sin/cos/tanh..., run on the tape's lanes (SIMD vector math, nothing more to
        compile) instead of a loop over their row kernel."""
        if not (self.backend.lane_tapes and self.strategy == STRAIGHT):
            return
        if on_tape is None:  # not decided before (and kept)
            from ..backends.numba.batch import uses_lanes
            from ..backends.tape.builder import lanes_beat_rows

            on_tape = [p.name for p in self.programs
                       if not uses_lanes(p) and lanes_beat_rows(p)]
        self.on_tape = [p for p in self.programs if p.name in on_tape]
        for p in self.on_tape:
            def batch(X: np.ndarray, OUT: np.ndarray, _name: str = p.name + "_batch") -> None:
                getattr(self.batch_tapes, _name)(X, OUT)

            batch.__name__ = batch.__qualname__ = p.name + "_batch"
            self.batches[p.name] = batch

    def _share_batches(self) -> None:
        """Batches on Numba's threads where the kernels release the GIL: a module's
        chunk-claiming kernel, or the batch kernel on parts of the rows."""
        if not self.backend.threaded_batches:
            return
        self.threaded = {}
        lanes = {p.name for p in self.on_tape}
        for p in self.programs:
            chunks = getattr(self.module, p.name + "_chunks", None)
            if self.backend.chunk_kernels and chunks is not None and p.name not in lanes:
                # Through its entry point: X is float64, C order and aligned on every path
                # here (it may be read-only: the kernel never writes X).
                self.threaded[p.name] = functools.partial(
                    run_shared, Entry(chunks, _CHUNK_TYPES), min_rows=rows_per_thread(p.cost))
            else:
                self.threaded[p.name] = functools.partial(
                    run_batch, self.batches[p.name], min_rows=rows_per_thread(p.cost))


def _in_blocks(kernel: Kernel, ops: int) -> Kernel:
    """A NumPy batch kernel of `ops` steps run over blocks of rows (runtime.blocks)."""
    def batch(X: np.ndarray, OUT: np.ndarray) -> None:
        run_blocks(kernel, X, OUT, ops)

    batch.__name__ = batch.__qualname__ = kernel.__name__
    return batch


def lane_units(program: Program) -> int:
    """The lane weight of `program`'s lane kernel (backends.numba.batch), 0 without one."""
    from ..backends.numba.batch import lane_weight, uses_lanes

    return lane_weight(program) if uses_lanes(program) else 0


def tape_module(folder: Path, key: str, programs: Sequence[Program]) -> Any:
    """The TapeModule of `programs`, their tapes read back from the cache folder, or built on
    first use (and kept there): compile, then a gradient, builds the gradient's tape alone.
    An op the interpreter lacks is refused now."""
    from ..backends.tape.interpreter import interpreter_for
    from ..backends.tape.module import DeferredTape, TapeModule

    @bulk
    def make(program: Program, interpreter: Any):
        from ..backends.tape.builder import build_tape

        tape = build_tape(program, interpreter)
        save_tape(folder, key, tape)
        return tape

    interpreter = interpreter_for()  # the op table's as it is now, not at the first call
    tapes = []
    for program in programs:
        tape = load_tape(folder, key, program)
        if tape is None:  # (the builder imported only then: tapes read back need none of it)
            from ..backends.tape.builder import check_tape_ops

            check_tape_ops(program, interpreter)
            tape = DeferredTape(program.name, functools.partial(make, program, interpreter))
        tapes.append(tape)
    return TapeModule(tapes)


@bulk  # one pause for every stage: the collector would rescan the whole graph between them
def build(outputs: Sequence[Node], args: Sequence[Node], wrt: Sequence[Node], *,
          backend: Backend, products: Sequence[Product],
          cache_dir: str | os.PathLike | None = None, strategy: str = "auto") -> Build:
    """The kernels of `products` for `outputs` over `args`, derivatives w.r.t. `wrt`: read
    back from the expression cache, or differentiated, scheduled, rendered (or taped) and
    kept there."""
    fixed = backend.strategy(strategy)  # refuses a strategy the backend lacks, before any work
    folder = cache_dir_of(cache_dir)
    key = expression_key(outputs, args, wrt, backend=backend.name,
                         products=[p.name for p in products], strategy=strategy)
    kept = load_programs(folder, key)
    if not _usable(kept, products, backend.strategies):
        kept = None
    record = kept[1] if kept is not None else {}
    # A module kept on disk is imported from its kept bytecode, its text read and checked
    # only if needed (loading.load_kept: an edited copy is made again then).
    on_disk = kept is not None and kept_file(folder, record.get("module"))
    first = backend.interpret_first and strategy == "auto"  # runtime.interpret
    if kept is not None and (on_disk or record.get("strategy") == TAPE or (
            first and record.get("interpreters"))):
        programs, chosen = kept[0], record["strategy"]
    else:  # differentiate, schedule (and below, render); interpreted: no display comments
        record, on_disk = {}, False
        programs = build_programs(outputs, args, wrt, products=products, comments=not first)
        if fixed is None:
            from ..backends.tape.choice import choose_strategy

            fixed = choose_strategy(programs, strategy)
        chosen = fixed
    kept_name = record.get("module") if on_disk else None  # (kept if the record is not)
    if first and chosen == STRAIGHT:
        try:
            return Deferred(backend, products, programs, (outputs, args, wrt), folder, key,
                            record, on_disk)
        except NotImplementedError:  # an op without a Python or NumPy form: compile at once
            if not on_disk:
                programs = build_programs(outputs, args, wrt, products=products)
            record = {}
    source = None
    if chosen == TAPE:  # huge programs: one cached interpreter, no compile
        module, path = tape_module(folder, key, programs), None
    else:
        module, path, source = _straight_module(backend, (outputs, args, wrt), products,
                                                programs, folder, kept_name)
    return _finish(Build(backend, chosen, products, programs, module, path, source, folder, key),
                   record)


def _straight_module(backend: Backend, nodes: tuple, products: Sequence[Product],
                     programs: list[Program], folder: Path, kept_name: str | None
                     ) -> tuple[Any, Path, str | None]:
    """The straight-line module: file `kept_name` kept on disk (imported from its kept
    bytecode; its text, None here, made again from the programs with their display comments
    if it turns out damaged when read), else rendered from `programs` and kept."""
    outputs, args, wrt = nodes
    if backend.prepare is not None:
        backend.prepare()
    if kept_name is not None:
        def render() -> str:
            shown = build_programs(outputs, args, wrt, products=products)
            return render_source(shown, outputs, args, backend)

        module, path = load_kept(folder, kept_name, render, lazy=backend.lazy_bodies)
        source = None
    else:
        source = render_source(programs, outputs, args, backend)
        module, path = load_source(source, folder, lazy=backend.lazy_bodies)
    backend.load(module)
    return module, path, source


def _finish(built: Build, record: dict, **extra: Any) -> Build:
    built._run_on_tape(record.get("on_tape"))
    if not record:
        save_programs(built._folder, built._key, built.programs, strategy=built.strategy,
                      module=built.path and built.path.name,
                      on_tape=[p.name for p in built.on_tape], **extra)
    built._share_batches()
    return built


class MadeOnUse:
    """What a build whose straight-line Build is made on first use (its `straight()`) shows of
    that Build: asking for the module, its file or source, or the batches' tapes makes it."""

    @property
    def module(self) -> Any:
        return self.straight().module

    @property
    def path(self) -> Path | None:
        return self.straight().path

    @property
    def source(self) -> str:
        return self.straight().source

    @property
    def batch_tapes(self) -> Any:
        return self.straight().batch_tapes

    @property
    def on_tape(self) -> list[Program]:
        return self.straight().on_tape


class Deferred(MadeOnUse):
    """A Build whose first calls run interpreted (runtime.interpret): the Python backend's
    module for the programs, per program a `Pending` switch to the straight-line Build, which
    is made (rendered, imported, its kernels compiled or loaded) when the switch pays, or
    when its module, file, source or raw kernels are asked for (calls then run it: what is
    shipped, e.g. to Dask workers, gives the very bits the function gives)."""

    def __init__(self, backend: Backend, products: Sequence[Product], programs: list[Program],
                 nodes: tuple, folder: Path, key: str, record: dict,
                 on_disk: bool) -> None:
        from .interpret import Pending

        self.backend, self.strategy, self.products = backend, STRAIGHT, tuple(products)
        self.programs, self._nodes, self._folder, self._key = programs, nodes, folder, key
        self._record, self._on_disk, self._built = record, on_disk, None
        self.rows_in_place = backend.rows_in_place  # the interpreter reads x first too
        # One interpreter module per program: a first value_and_grad imports the gradient's
        # alone (a 1,000-operation function's value module: ~40% of the bytecode, 1-2 ms).
        names = record.get("interpreters")
        names = names if isinstance(names, dict) else {}
        self._interpreters: dict[str, Any] = {}  # program name -> its module, once imported
        self._interpreter_names = {p.name: names.get(p.name) for p in programs}
        for p in programs:  # (kept ones are read and checked on first use)
            if not isinstance(self._interpreter_names[p.name], str):
                # rendered now (an op it lacks refuses here) and written for the next process
                self._interpreter_names[p.name] = Path(self.interpreter(p.name).__file__).name
        if not record:  # kept now: a second process interprets without differentiating
            save_programs(folder, key, programs, strategy=STRAIGHT,
                          interpreters=self._interpreter_names)
        cached = on_disk  # a module made before: Numba's cache likely has it
        # Kept from an earlier process, a program's interpreter module is imported on its
        # first call: a call that loads the compiled kernels at once never needs it.
        on_tape = record.get("on_tape") or ()  # (decided and kept by an earlier process)
        self.pending = {p.name: Pending(p.name, p.op_count,
                                        functools.partial(self.interpreter, p.name),
                                        self.straight, lambda: cached, p.name in on_tape,
                                        functools.partial(lane_units, p),
                                        lambda p=p: p.census)
                        for p in programs}
        self.rows: dict[str, Kernel] = {n: p.row for n, p in self.pending.items()}
        self.batches: dict[str, Kernel] = {n: p.batch for n, p in self.pending.items()}
        self.threaded: dict[str, Kernel] = {n: p.threaded for n, p in self.pending.items()}
        # Called with the module once the switch has made it (the API binds its one-point
        # functions to that module's point kernels then).
        self.on_switch: list[Callable[[Any], None]] = []

    def interpreter(self, name: str) -> Any:
        """The Python backend's module of program `name` (imported on first use)."""
        module = self._interpreters.get(name)
        if module is None:
            from . import interpret

            with interpret.switch_lock:
                module = self._interpreters.get(name)
                if module is None:
                    from ..backends.registry import BACKENDS

                    outputs, args, _ = self._nodes
                    program = next(p for p in self.programs if p.name == name)

                    def render() -> str:
                        return render_source([program], outputs, args, BACKENDS["python"],
                                             described=False)

                    kept = self._interpreter_names[name]
                    # (kept: its text read only if its bytecode is not; damaged: made again)
                    module = self._interpreters[name] = (
                        load_kept(self._folder, kept, render)[0]
                        if kept_file(self._folder, kept)
                        else load_source(render(), self._folder, sync=False)[0])
        return module

    @property
    def made(self) -> bool:
        """Whether the straight-line Build has been made (asking `module` would make it)."""
        return self._built is not None

    def straight(self) -> Build:
        """The straight-line Build: made on the first call (thread-safe), kept after."""
        from . import interpret

        with interpret.switch_lock:
            if self._built is None:
                self._built = self._make()
                self.programs = self._built.programs  # (with their display comments)
                for pending in self.pending.values():  # the module asked for is the one run
                    pending.built = self._built
                for bind in self.on_switch:
                    bind(self._built.module)
        return self._built

    def _make(self) -> Build:
        record, programs = self._record, self.programs
        if not self._on_disk:  # the display comments the module shows, then its text
            outputs, args, wrt = self._nodes
            programs = build_programs(outputs, args, wrt, products=self.products)
            record = {}
        kept_name = record.get("module") if self._on_disk else None
        module, path, source = _straight_module(self.backend, self._nodes, self.products,
                                                programs, self._folder, kept_name)
        built = Build(self.backend, STRAIGHT, self.products, programs, module, path, source,
                      self._folder, self._key)
        return _finish(built, record,
                       interpreters=self._interpreter_names)
