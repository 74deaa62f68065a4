"""Packs: a point kernel's independent calls of one vecmath function, computed SIMD lanes at a
time.

A point kernel is one row of scalar code, so each ``math.sin(x)`` in it is a serial libm call
(~10-15 ns). Calls of one function that none of the others needs (at the same depth of such
calls: a call's depth is one more than the deepest call its operand needs) form a pack: the
runtime's lowering (runtime.lowering, `compile_steps`' packs) stores their operands in a small
array, runs the op table's vecmath function over it in one loop (which LLVM vectorises: 4
lanes an instruction with AVX2) and reads the results back; the operands beyond vecmath's exact
range (batch.LIMITED) are computed again with libm, as lane kernels do. A sin and a cos of one
operand are one member of a ``vsincos`` pack (one argument reduction for both), an lgamma and a
digamma one of a ``vlgamma_digamma`` pack (one reduction, log and reciprocal).

Only what the op table says is packable: ops whose lane template is one vecmath call of the
operand and whose Numba template one libm call of it; of two operands, x ** y (vpow, `SEVERAL`;
its small integer powers are products, no call). The steps are reordered (a stable
topological order) so that a pack's steps stand together, after every operand they read:
the row kernel runs the same statements in that order (the same bits).

The module lists every pack that some ISA runs (simd.fewest), the same text on every machine;
whether a listed pack runs as a vecmath loop on this CPU, and over how many lanes, the lowering
decides when Numba compiles (simd.pack_lanes: AVX2 and AVX-512 fitted apart); one it does not
run so is the row's libm calls, in the listed order.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import replace

from ...ir.ops import OPS
from ...lower.schedule import Program
from ..common import operand_text
from . import simd
from .batch import LIMITED
from .simd import OPERAND_NAMES

# Fewest members of any pack the module lists (a floor; A/Bs raise it): a function's own is
# simd.fewest, the fewest any ISA runs as a pack. Whether a listed pack runs SIMD, and over how
# many lanes, the lowering decides for the CPU it compiles for (simd, where the fitted figures
# are), so generated text is the same on every machine.
MIN_MEMBERS = 2
MAX_MEMBERS = 256  # more: packs of this many (a pack's arrays live on the kernel's stack)
# A value and its derivative of one operand: one call of both (one argument reduction)
PAIRS = {("vsin", "vcos"): "vsincos", ("vlgamma", "vdigamma"): "vlgamma_digamma"}
# Functions of several operands that pack (x ** y, 8 of them: 367 -> 290 ns; packs_micro)
SEVERAL = {"vpow"}


def packable(op: str, operands: Sequence[str] = ("x",)) -> str | None:
    """The vecmath function a step of `op` on `operands` (their texts) packs into, or None:
    its lane template is that one call of the operands and its Numba template one call of
    them too (the libm fix-up). Of functions of several operands, only `SEVERAL`'s."""
    spec = OPS[op]
    if spec.lanes is None or spec.nb is None or len(operands) != spec.arity:
        return None
    texts = list(operands)
    lane = re.fullmatch(r"(v[a-z0-9]+)\((.*)\)", spec.render("lanes", texts))
    libm = spec.render("nb", texts)
    call = re.fullmatch(r"[\w.]+\((.*)\)", libm)  # or x ** y: Numba's pow, as a call
    if not (lane and lane.group(2) == ", ".join(texts)
            and (call and call.group(1) == lane.group(2) or libm == " ** ".join(texts))):
        return None  # (pow's small integer powers: products, no call)
    return lane.group(1) if len(texts) == 1 or lane.group(1) in SEVERAL else None


def limit(function: str) -> str:
    """The condition on the operands ``x`` (and ``y``) under which the libm value replaces
    vecmath's ("" when vecmath is exact everywhere)."""
    parts = [f for f, pair in PAIRS.items() if pair == function]
    names = parts[0] if parts else (function,)
    return next((LIMITED[n].format(*OPERAND_NAMES) for n in names if n in LIMITED), "")


def packs(p: Program) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    """`p`'s packs: (vecmath function, members), a member the targets of its call (two for a
    sincos pair), in step order; only packs of at least MIN_MEMBERS members and of as many
    as some ISA runs as a pack (simd.fewest)."""
    depth: dict[str, int] = {}
    groups: dict[tuple[str, int], dict[str, list[str]]] = {}  # (function, depth) -> operand
    for s in p.steps:
        d = max((depth.get(o.value, 0) for o in s.operands if o.kind == "name"), default=0)
        function = packable(s.op, [operand_text(o) for o in s.operands])
        if function is None:
            depth[s.target] = d
            continue
        depth[s.target] = d + 1
        key = repr(tuple(s.operands))
        groups.setdefault((function, d), {}).setdefault(key, []).append(s.target)
    found: list[tuple[str, tuple[tuple[str, ...], ...]]] = []
    for (function, d), members in groups.items():
        for (first, second), both in PAIRS.items():
            if function != first or (second, d) not in groups:
                continue
            others = groups[(second, d)]
            paired = [k for k in members if k in others and len(members[k]) == len(others[k]) == 1]
            if len(paired) >= max(MIN_MEMBERS, simd.fewest(both)):
                found += _split(both, [(members[k][0], others[k][0]) for k in paired])
                for k in paired:
                    del members[k], others[k]
    for (function, _), members in groups.items():
        single = [(t,) for targets in members.values() for t in targets]
        if len(single) >= max(MIN_MEMBERS, simd.fewest(function)):
            found += _split(function, single)
    order = {s.target: k for k, s in enumerate(p.steps)}
    return sorted(found, key=lambda pack: order[pack[1][0][0]])


def _split(function: str, members: list) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    """Packs of at most MAX_MEMBERS members (the last at least MIN_MEMBERS and `function`'s
    fewest: it takes the rest)."""
    cuts = list(range(0, len(members), MAX_MEMBERS))
    if len(cuts) > 1 and len(members) - cuts[-1] < max(MIN_MEMBERS, simd.fewest(function)):
        cuts.pop()
    return [(function, tuple(members[a:b])) for a, b in zip(cuts, [*cuts[1:], len(members)])]


def packed_order(p: Program, found: list) -> Program:
    """`p` with each pack's steps together, after all they read and before all that read them:
    the original order wherever that allows it (Kahn's, the earliest step first)."""
    if not found:
        return p
    index = {s.target: k for k, s in enumerate(p.steps)}
    node = list(range(len(p.steps)))  # step -> its node: itself, or its pack's first step
    for _, members in found:
        first = min(index[t] for member in members for t in member)
        for member in members:
            for t in member:
                node[index[t]] = first
    parts: dict[int, list[int]] = {}
    for k in range(len(p.steps)):
        parts.setdefault(node[k], []).append(k)
    needs: dict[int, set[int]] = {n: set() for n in parts}
    users: dict[int, list[int]] = {n: [] for n in parts}
    for n, ks in parts.items():
        for k in ks:
            for o in p.steps[k].operands:
                j = index.get(o.value) if o.kind == "name" else None
                if j is not None and node[j] != n and node[j] not in needs[n]:
                    needs[n].add(node[j])
                    users[node[j]].append(n)
    waiting = {n: len(deps) for n, deps in needs.items()}
    ready = [n for n, w in waiting.items() if w == 0]
    heapq.heapify(ready)
    steps = []
    while ready:
        n = heapq.heappop(ready)
        steps += [p.steps[k] for k in parts[n]]
        for u in users[n]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    assert len(steps) == len(p.steps), "packs depend on each other"  # depths forbid it
    return replace(p, steps=tuple(steps))
