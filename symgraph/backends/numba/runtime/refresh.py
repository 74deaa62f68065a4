"""A light first refresh of Numba's CPU target, while a symgraph kernel compiles (`light`).

Before its first compile in a process, Numba refreshes its target context: it imports every
implementation it has and registers them. Among them are linalg and arraymath (which import
SciPy's linalg, for BLAS), the NumPy random generators, polynomials, typed containers,
jitclass, datetimes and cffi: 0.2-0.3 s of a first compile (a 4-8-1 MLP's dynamic first step
at 10^6 rows took 0.8-1.0 s), for functions generated kernels never call (arithmetic, math,
NumPy's ufuncs, arrays, tuples, ranges, a raise with a message).

`light` makes the refreshes inside it load only those (`_light`); whatever it leaves out is
loaded by the next refresh outside it (every compile starts with one), as Numba loads
registries incrementally. So a process that compiles only symgraph's kernels never imports
the rest, and anything else compiled later finds Numba as it always is. If a kernel needs
more than the light set, its compile fails inside `light` and the caller compiles it again
outside (backends.numba.cache.resolve): slower, never different.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def _light(context: Any) -> None:
    """`load_additional_registries` of Numba's CPU context, minus what kernels never use."""
    from numba.core import optional  # noqa: F401
    from numba.core.runtime import rtsys
    from numba.cpython import (  # noqa: F401
        builtins,
        charseq,
        cmathimpl,
        enumimpl,
        hashing,
        iterators,
        listobj,
        mathimpl,
        numbers,
        printimpl,
        rangeobj,
        setobj,
        slicing,
        tupleobj,
        unicode,
    )
    from numba.np import arrayobj, npyimpl  # noqa: F401

    rtsys.initialize(context)
    for registry in (cmathimpl.registry, mathimpl.registry, npyimpl.registry,
                     printimpl.registry):
        context.install_registry(registry)


@contextlib.contextmanager
def light() -> Iterator[None]:
    """Compiles inside refresh Numba's CPU target with `_light` (under Numba's compiler lock,
    so no other thread compiles meanwhile)."""
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target

        context = cpu_target.target_context
    except Exception:  # noqa: BLE001 - another Numba: its own refresh
        yield
        return
    with global_compiler_lock:
        if "load_additional_registries" in vars(context):  # nested: the outer one restores
            yield
            return
        context.load_additional_registries = lambda: _light(context)
        try:
            yield
        finally:
            del context.load_additional_registries
