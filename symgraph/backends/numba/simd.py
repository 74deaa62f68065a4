"""How a point kernel runs a pack (backends.numba.packs) on the CPU Numba compiles for.

A generated module lists every candidate pack (`fewest`: the fewest members of a function any
ISA below runs as a pack), the same text on every machine; the runtime's lowering
(runtime.lowering's `compile_steps`) asks `pack_lanes` at Numba compile time whether to run a
pack as one vecmath loop, and over how many lanes, or as the row's plain libm calls. Numba's
on-disk cache is keyed by the CPU's name and features, so a cache built on one ISA is never
run on another; this file is one of the runtime's (cache.runtime_files), so an edit of the
rules is a new module text. No import of Numba but in `vector_doubles` (emit imports this).

Fitted on the FIT families and on one-function A/Bs (`python -m benchmarks.packs_micro`: N
independent calls f(x_k), packed against unpacked, interleaved in one process; synthetic, so
no family is held out by it), never on held-out families. Figures: ns saved (-) or lost (+)
a member against the unpacked kernel; single runs move by ~3-6 ns a member.

* AVX-512 (Zen 4, 8 doubles a vector; 2026-12-02, benchmarks/results/onepoint.md): at least 8
  members, the loop over a multiple of 8 operands. 8 against 4 members: option_portfolio@6
  219 against 245 ns (a pack of 6 logs lost), product_chain@33 540 -> 401 ns, arrhenius@31
  297 -> 250, weibull@14 274 -> 235; packs of 1-3 lost 5-25% against glibc's calls. (vpow,
  packed since: the same rule, not measured there.)
* AVX2 (Zen 3, 4 doubles; 2026-12-06, load 1-2): glibc's calls are ~2x slower than on Zen 4
  while vecmath's loop costs about the same a vector, so packs pay sooner. Lanes: a multiple
  of 4, at least 8: LLVM unrolls a loop of 4 whole and leaves it scalar (no ymm operation in
  a pack of 4 exps), a loop of 8 it vectorises (at 2 / 4 members, 4 lanes against 8: cosh -5
  / -7 against -11 / -14, pow +4 / -4 against -2 / -10, log1p +4 / -3 against -3 / -14, atan
  +6 / -1 against -3 / -9, log +7 / +4 against +4 / -2; tanh, sin, erf, exp alike); past 8,
  the multiple of 4 (9 members: lgamma -13 against -6, tanh -8 against -6; 12: -23 against
  -16, -9 against -7; exp, log alike). But lgamma and digamma: at least 4 (their scalar code
  beats their vectors': 2 members -11 and -2 at 4 lanes, +57 and +40 at 8; 4 members -29 and
  -15 against +7 and +13). Members: from 2 for the costly functions (at 2 / 3 / 4 members,
  at least 8 lanes: cosh -11 / -17 / -14, sinh -19 / -29 (4 lanes), tanh -10 / -5 / -4, sin
  -4 / -8 / -9, pow -2 / -8 / -10, lgamma -11 / -24 / -29 at 4 lanes), from 4 for the cheap
  ones (exp +2 / 0 / -1, log +4 / +1 / -2, erf +8 / -5 / -3, log1p -3 / -3 / -14, atan -3 /
  ? / -9; log1p and atan gain from 2 at 8 lanes, by ~3 ns a member: within a run's noise,
  so they keep the default). FIT at ~100 operations (packs_ab --random, before (8/8-pow)
  against this rule, in turns): weibull@14 596 -> 459 ns (its 14 x ** k),
  option_portfolio@6 421 -> 392, product_chain@3 260 -> 224, the rest within noise (+-7%);
  benchmarks/results/packs_avx2.md.
* lgamma with its digamma (a `vlgamma_digamma` pair, 2026-12-07, Zen 4, packs_micro's lgamma
  workload: a value+gradient pairs them; the unpacked calls are vecmath_gamma's branching
  scalar forms, ~23 and ~17 ns): at least 2 members on both ISAs. AVX-512, 8 lanes, at 1 / 2 /
  3 / 4 / 8 members: +16 / -6 / -19 / -21 / -29 ns a member. AVX2 (LLVM's znver3 code on the
  same Zen 4, 4 lanes): +4 / -14 / -20 / -33 / -30 (at 8 lanes, what the default gave it: +74
  / +22 at 1 / 2). Single runs move by ~20%.
* Anything else (SSE only): never packed (not measured; two lanes a vector).
"""

from __future__ import annotations

import functools

OPERAND_NAMES = ("x", "y")  # a listed pack's limit names its operands so (packs.limit)
# Fewest members run as a pack, per doubles a vector: a function's own, else the default.
MEMBERS = {8: {"": 8, "vlgamma_digamma": 2},
           4: {"": 4, "vsin": 2, "vcos": 2, "vsincos": 2, "vtanh": 2, "vcosh": 2,
               "vsinh": 2, "vlgamma": 2, "vdigamma": 2, "vlgamma_digamma": 2, "vpow": 2}}
# Fewest lanes a pack's loop runs (a multiple of the vector's doubles)
LANES = {8: {"": 8}, 4: {"": 8, "vlgamma": 4, "vdigamma": 4, "vlgamma_digamma": 4}}


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
    the vector's doubles: no scalar remainder; the padding lanes compute f(1.0)), or 0: the
    row's libm calls instead. `width`: doubles a vector (default: the host's)."""
    width = vector_doubles() if width is None else width
    fewest, least = MEMBERS.get(width), LANES.get(width, {"": width})
    if fewest is None or members < fewest.get(function, fewest[""]):
        return 0
    return max(-(-members // width) * width, least.get(function, least[""]))


def fewest(function: str) -> int:
    """The fewest members of a pack of `function` that any ISA runs as a pack: fewer, the
    module lists no pack (its calls stay in the row's order)."""
    return min(table.get(function, table[""]) for table in MEMBERS.values())
