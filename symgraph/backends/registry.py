"""The backends by name, and the module source for programs (what `compile` loads and
`symgraph codegen` prints)."""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.node import Node
from ..lower import naming
from ..lower.programs import build_programs, describe
from ..lower.schedule import Program
from ..version import __version__
from .numba.emit import emit_numba, emit_numba_standalone
from .python import emit_python

BACKENDS = {"numba": emit_numba, "python": emit_python}
# Modules that need no symgraph to run (`symgraph codegen --standalone`); Python's always do.
STANDALONE = {"numba": emit_numba_standalone, "python": emit_python}


def render_source(programs: Sequence[Program], outputs: Sequence[Node], inputs: Sequence[Node],
                  backend: str, labels: Sequence[str] | None = None,
                  standalone: bool = False) -> str:
    """The source of a kernel module: the one `compile` loads (Numba's imports symgraph's Numba
    runtime), or with `standalone` one that imports only math, NumPy and Numba's public API."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {sorted(BACKENDS)}")
    labels = list(labels) if labels else naming.value_labels(len(outputs))
    names = [a.value for a in inputs]
    kind = "Value and derivatives of " if len(programs) > 1 else "Value of "
    title = kind + ", ".join(labels) + f"({', '.join(names)})"
    emit = (STANDALONE if standalone else BACKENDS)[backend]
    return emit(programs, title, describe(outputs, labels), names, __version__)


def generate_source(outputs: Sequence[Node], inputs: Sequence[Node], wrt: Sequence[Node], *,
                    backend: str, scalar: bool, hessian: bool = False,
                    derivatives: bool = True, labels: Sequence[str] | None = None,
                    standalone: bool = False) -> tuple[str, list[Program]]:
    """Programs for `outputs` and the module source that runs them (`render_source`)."""
    programs = build_programs(outputs, inputs, wrt, scalar, hessian, derivatives)
    return render_source(programs, outputs, inputs, backend, labels, standalone), programs
