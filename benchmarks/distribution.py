"""The generated workloads' figures as distributions: for each figure, symgraph against the best
peer on every workload (min, median, worst five, the share that meets its target) and the list of
losers, split by families that may be fitted and families held out (benchmarks/families.py).

A ratio here is always "how many times better symgraph is" (above 1 symgraph leads), so the
minimum is the worst case the targets speak of.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.report import best_peer, by_workload, seconds

PEERS_EXCLUDED = ("symgraph", "hand-written Numba")


@dataclass(frozen=True)
class Figure:
    title: str
    key: str
    target: float  # ratio symgraph must reach
    ratio: Callable[[dict, list[dict]], tuple[float, str] | None]  # (ratio, against what)


def _against_best(key: str) -> Callable[[dict, list[dict]], tuple[float, str] | None]:
    def ratio(sg: dict, group: list[dict]) -> tuple[float, str] | None:
        best = best_peer(group, key)
        mine = sg.get(key)
        return None if best is None or not mine else (best[1] / mine, best[0])
    return ratio


def _against(label: str, key: str) -> Callable[[dict, list[dict]], tuple[float, str] | None]:
    def ratio(sg: dict, group: list[dict]) -> tuple[float, str] | None:
        peer = next((r for r in group if r.get("label") == label and r["status"] == "ok"), None)
        mine = sg.get(key)
        return None if peer is None or not mine or not peer.get(key) else (
            peer[key] / mine, label)
    return ratio


FIGURES = [
    Figure("batch value+gradient, 1 core, vs best peer (target ≥ 1.5)", "batch_1t_s", 1.5,
           _against_best("batch_1t_s")),
    Figure("batch value+gradient, all cores, vs best peer", "batch_all_s", 1.5,
           _against_best("batch_all_s")),
    # (symgraph's 1-point call: fn.value_and_grad_floats, its fastest documented form)
    Figure("1-point value+gradient vs best peer", "call_s", 1.0, _against_best("call_s")),
    Figure("1-point vs SymPy lambdify + numba.njit (target ≥ 1)", "call_s", 1.0,
           _against("SymPy lambdify + numba.njit", "call_s")),
    # ≤ 3× SymEngine's cold setup is a ratio of at least 1/3 in this direction
    Figure("cold setup vs SymEngine (target ≥ 1/3)", "setup_cold_s", 1 / 3,
           _against("SymEngine Lambdify LLVM", "setup_cold_s")),
]


def _symgraph(group: Sequence[dict]) -> dict | None:
    return next((r for r in group if r.get("label") == "symgraph" and r["status"] == "ok"), None)


def ratios(rows: Sequence[dict], workloads: Sequence[str], figure: Figure
           ) -> list[tuple[float, str, str]]:
    """(ratio, workload, peer) for every workload where both sides finished."""
    out = []
    grouped = by_workload(rows, workloads)
    for name in workloads:  # (by_workload also groups the rows of other workloads)
        group = grouped[name]
        sg = _symgraph(group)
        found = None if sg is None else figure.ratio(sg, group)
        if found is not None:
            out.append((found[0], name, found[1]))
    return sorted(out)


def _summary(values: list[tuple[float, str, str]], target: float) -> str:
    if not values:
        return "no data |||"
    rs = [r for r, _, _ in values]
    met = sum(r >= target for r in rs)
    return (f"{len(rs)} | {rs[0]:.2f} | {statistics.median(rs):.2f} | "
            f"{met}/{len(rs)} ({100 * met / len(rs):.0f}%)")


def table(rows: Sequence[dict], generated: dict, fit: Sequence[str]) -> list[str]:
    """Markdown: one line per figure and split, then the worst five and all losers."""
    names = list(generated)
    fitted = [n for n in names if n.partition("@")[0] in fit]
    held = [n for n in names if n not in fitted]
    lines = ["| figure | families | workloads | min | median | meets target |",
             "|---|---|---:|---:|---:|---:|"]
    detail: list[str] = []
    for figure in FIGURES:
        for split, chosen in (("all", names), ("fit", fitted), ("held out", held)):
            lines.append(f"| {figure.title} | {split} | "
                         f"{_summary(ratios(rows, chosen, figure), figure.target)} |")
        every = ratios(rows, names, figure)
        losers = [f"{name} {r:.2f} ({peer})" for r, name, peer in every if r < figure.target]
        worst = ", ".join(f"{name} {r:.2f} ({peer})" for r, name, peer in every[:5])
        detail += [f"- **{figure.title}**: worst five {worst or '—'}; "
                   f"{len(losers)} below target" + (f": {', '.join(losers)}" if losers else "")]
    return lines + ["", *detail]


def throughput(rows: Sequence[dict], generated: dict, points: int, peak: float | None
               ) -> list[str]:
    """Operations per nanosecond of symgraph's value+gradient batch on one core, against the
    core's peak (arithmetic-bound families) and bytes per nanosecond moved (data-bound)."""
    lines = ["| workload | ops (v+g program) | batch per point | ops/ns | of peak | bytes/ns |",
             "|---|---:|---:|---:|---:|---:|"]
    grouped = by_workload(rows, list(generated))
    for name in generated:
        sg = _symgraph(grouped[name])
        if sg is None or not sg.get("batch_1t_s") or not sg.get("ops_grad"):
            continue
        per_point = sg["batch_1t_s"] / points
        ops_ns = sg["ops_grad"] / (per_point * 1e9)
        arguments = (sg.get("details") or {}).get("arguments") or 0
        moved = 8 * (2 * arguments + 1)  # read the point, write value and gradient
        share = f"{100 * ops_ns / peak:.1f}%" if peak else "—"
        lines.append(f"| {name} | {sg['ops_grad']} | {seconds(per_point)} | {ops_ns:.2f} | "
                     f"{share} | {moved / (per_point * 1e9):.2f} |")
    return lines


def core_peak() -> tuple[float | None, str]:
    """Double-precision flops per nanosecond of one core: vector width x FMA x clock, from
    /proc/cpuinfo (None where it does not say)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None, "no /proc/cpuinfo"
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                  if line.startswith("flags")), [])
    mhz = next((float(line.split(":", 1)[1]) for line in text.splitlines()
                if line.startswith("cpu MHz")), None)
    if mhz is None:
        return None, "no clock in /proc/cpuinfo"
    lanes = 8 if "avx512f" in flags else 4 if "avx" in flags else 2
    fma = 2 if "fma" in flags else 1
    peak = lanes * fma * 2 * mhz / 1000  # two FMA ports per core on the x86 cores seen here
    return peak, f"{lanes} lanes × {'FMA' if fma == 2 else 'no FMA'} × 2 ports × {mhz:.0f} MHz"


def markdown(results: dict) -> list[str]:
    from benchmarks import families

    meta = results["meta"]
    generated = meta.get("generated") or {}
    if not generated:
        return []
    peak, how = core_peak()
    return ["## Generated workloads: distribution", "",
            f"{len(generated)} workloads from {len({n.partition('@')[0] for n in generated})} "
            "families (benchmarks/families.py). Ratios: how many times better symgraph is "
            "than the peer on that workload (above 1 symgraph leads). 'fit' families may be "
            "used to tune strategies and thresholds; 'held out' families never are.", "",
            *table(results["rows"], generated, families.FIT), "",
            f"### Throughput against the physical limit (peak {peak or 0:.1f} flops/ns: {how})",
            "", *throughput(results["rows"], generated, meta["batch"], peak), ""]
