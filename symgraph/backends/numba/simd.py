"""How a point kernel runs a pack (backends.numba.packs) on the CPU Numba compiles for.

A generated module lists every candidate pack (`fewest`: the fewest members of a function any
ISA below runs as a pack), the same text on every machine; the runtime's lowering
(runtime.lowering's `compile_steps`) asks `pack_lanes` at Numba compile time whether to run a
pack as one vecmath loop, and over how many lanes, or as the row's plain libm calls. Numba's
on-disk cache is keyed by the CPU's name and features, so a cache built on one ISA is never
run on another; this file is one of the runtime's (cache.runtime_files), so an edit of the
rules is a new module text. No import of Numba but in `vector_doubles` (emit imports this).

Fitted on the FIT families and on one-function A/Bs (N independent calls f(x_i), packed
against unpacked, interleaved in one process; /tmp scripts, figures below), never on held-out
families:

* AVX-512 (Zen 4, 8 doubles a vector; 2026-12-02, benchmarks/results/onepoint.md): at least 8
  members, the loop over a multiple of 8 operands. 8 against 4 members: option_portfolio@6
  219 against 245 ns (a pack of 6 logs lost), product_chain@33 540 -> 401 ns, arrhenius@31
  297 -> 250, weibull@14 274 -> 235; packs of 1-3 lost 5-25% against glibc's calls.
* AVX2 (Zen 3, 4 doubles; 2026-12-06, load ~1.5-2): the loop over a multiple of 4 operands
  (one vector): 8 padded lanes cost the big functions their extra vector (lgamma x2: -10 ns a
  member at 4 lanes, +56 at 8; x9: -13 against -6; x12 -23 against -16; tanh x12 -9.2
  against -7.2; exp, log alike at 4 and 8). glibc's calls are ~2x slower than on Zen 4 while
  vecmath's loop costs the same per vector, so packs pay sooner: from 2 members for the
  costly functions (ns saved a member at 2 / 3 members: sinh 19 / 29, cosh 10-16 / 9-17,
  lgamma 10 / 24, tanh 2 / 5, sin 1 / 8-10, digamma 3 / 8), from 4 for the cheap ones, which
  break even at 2-3 (at 2 / 3 / 4: exp +6 / 0 / -1 ... +1, log +7 / +2 / -2 ... +5, log1p +5 /
  0 / -3 ... +3, erf +8 / +2 / -4 ... -9, atan +5 / 0 / -9, asinh +2 / -3, expm1 -6 / -1 / -3;
  + is a loss). FIT at ~100 operations with 4 against 8 (no pack of 4-7 there but
  option_portfolio's 6 logs, +3% either way): weibull@14 -8%, product_chain@33 -22%,
  mlp_loss@4 -16% (a random point: at the box's midpoint, 0, glibc's tanh takes a shortcut).
* Anything else (SSE only): never packed (not measured; two lanes a vector).
"""

from __future__ import annotations

import functools

# Fewest members run as a pack, per doubles a vector: a function's own, else the default.
MEMBERS = {8: {"": 8},
           4: {"": 4, "vsin": 2, "vcos": 2, "vsincos": 2, "vtanh": 2, "vcosh": 2,
               "vsinh": 2, "vlgamma": 2, "vdigamma": 2}}


@functools.cache
def vector_doubles() -> int:
    """Doubles a SIMD vector holds on the CPU Numba compiles for: 8 with AVX-512F, 4 with AVX2
    and FMA, else 2 (Numba's NUMBA_CPU_NAME / NUMBA_CPU_FEATURES and NUMBA_ENABLE_AVX apply)."""
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    features = config.CPU_FEATURES
    if features is None:  # a named CPU without features (e.g. "generic"): no wide vectors
        features = get_host_cpu_features() if config.CPU_NAME in (None, "host") else ""
    flags = set(features.split(","))
    if "+avx512f" in flags:
        return 8
    return 4 if {"+avx2", "+fma"} <= flags else 2


def pack_lanes(function: str, members: int, width: int | None = None) -> int:
    """Operands a pack of `members` calls of the vecmath `function` computes (a multiple of
    the vector's doubles: no scalar remainder), or 0: the row's libm calls instead. `width`:
    doubles a vector (default: the host's, `vector_doubles`)."""
    width = vector_doubles() if width is None else width
    fewest = MEMBERS.get(width)
    if fewest is None or members < fewest.get(function, fewest[""]):
        return 0
    return -(-members // width) * width


def fewest(function: str) -> int:
    """The fewest members of a pack of `function` that any ISA runs as a pack: fewer, the
    module lists no pack (its calls stay in the row's order)."""
    return min(table.get(function, table[""]) for table in MEMBERS.values())
