"""The backends by name, and the module source for programs (what `compile` loads and
`symgraph codegen` prints)."""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.node import Node
from ..lower import naming
from ..lower.programs import build_programs, describe
from ..lower.schedule import Program
from ..version import __version__
from .numba.emit import emit_numba
from .python import emit_python

BACKENDS = {"numba": emit_numba, "python": emit_python}


def render_source(programs: Sequence[Program], outputs: Sequence[Node], inputs: Sequence[Node],
                  backend: str, labels: Sequence[str] | None = None) -> str:
    """The source of a standalone kernel module (imports only math, NumPy, Numba)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {sorted(BACKENDS)}")
    labels = list(labels) if labels else naming.value_labels(len(outputs))
    names = [a.value for a in inputs]
    kind = "Value and derivatives of " if len(programs) > 1 else "Value of "
    title = kind + ", ".join(labels) + f"({', '.join(names)})"
    return BACKENDS[backend](programs, title, describe(outputs, labels), names, __version__)


def generate_source(outputs: Sequence[Node], inputs: Sequence[Node], wrt: Sequence[Node], *,
                    backend: str, scalar: bool, hessian: bool = False,
                    derivatives: bool = True, labels: Sequence[str] | None = None
                    ) -> tuple[str, list[Program]]:
    """Programs for `outputs` and the module source that runs them."""
    programs = build_programs(outputs, inputs, wrt, scalar, hessian, derivatives)
    return render_source(programs, outputs, inputs, backend, labels), programs
