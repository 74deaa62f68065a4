"""Warm setup only (issue 20: <= 20 ms for functions up to 1,000 operations), A/B over trees.

    python -m benchmarks.warm --sizes 100,1000 --warm 3
    python -m benchmarks.warm --only coulomb@6,rational@14 --trees /tmp/base,. --warm 6
    python -m benchmarks.warm --summary runs.json   # the closing lines again, from --json

Per workload and tree: one cold process (benchmarks.setup's child: it fills the expression
cache and Numba's cache, then makes the kernels the calls would switch to), then `--warm` warm
processes over those caches, the trees alternating (which goes first alternates too), so a
change of load hits both alike. Each tree runs its own symgraph (the child runs with the
tree as its working directory) over its own cache folder; Numba's cache folder is the
environment's (the tape interpreter precompiled), symgraph's default folder one per tree
under $SYMGRAPH_CACHE_DIR. Reported: the warm processes' CPU
(`time.process_time`) and wall ms over compile + first point + first batch, the calls' own
CPU (the same calls on the compiled kernels), whether the first batch was interpreted, and
the load average before and after.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

MARK = "@@SETUP "


def _child(tree: str, name: str, cache: str, batch: int) -> dict:
    env = {**os.environ, "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS", "1")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.path.abspath(tree)
    # Each tree its own default folder (Numba's runtime's kept copy, the code fingerprint's
    # memo): two versions of symgraph would otherwise replace each other's files.
    root = os.environ.get("SYMGRAPH_CACHE_DIR") or tempfile.gettempdir()
    env["SYMGRAPH_CACHE_DIR"] = os.path.join(
        root, "tree-" + hashlib.sha256(os.path.abspath(tree).encode()).hexdigest()[:12])
    out = subprocess.run([sys.executable, "-m", "benchmarks.setup", "--child", "symgraph", name,
                          cache, str(batch)], capture_output=True, text=True, env=env,
                         cwd=tree, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    raise RuntimeError(f"{tree} {name}: {out.stderr[-800:]}")


def _fmt(values: list[float]) -> str:
    return f"{min(values):6.1f} {statistics.median(values):6.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--families", default="all", help="fit, validate or all")
    parser.add_argument("--only", default="", help="comma-separated family@n names")
    parser.add_argument("--trees", default=".", help="comma-separated source trees")
    parser.add_argument("--warm", type=int, default=3, help="warm processes per tree")
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--json", default="", help="append every warm run here")
    parser.add_argument("--summary", default="", help="summarize a --json file and stop")
    args = parser.parse_args(argv)
    if args.summary:
        with open(args.summary) as f:
            print("\n".join(summary([json.loads(line) for line in f if line.strip()])))
        return
    from benchmarks import families

    if args.only:
        names = args.only.split(",")
    else:
        chosen = {"fit": families.FIT, "validate": families.VALIDATE,
                  "all": list(families.FAMILIES)}[args.families]
        names = list(families.sizes(tuple(int(s) for s in args.sizes.split(",")), chosen))
    trees = args.trees.split(",")
    print(f"load {os.getloadavg()}", flush=True)
    everything: list[dict] = []
    head = "  ".join(f"T{t} cpu min/med  -calls  wall min/med  interp" for t in range(len(trees)))
    print(f"{'workload':22s} {'ops':>5s}  {head}", flush=True)
    for name in names:
        caches = [tempfile.mkdtemp(prefix="sg-warm-") for _ in trees]
        ops = 0
        for tree, cache in zip(trees, caches):
            ops = _child(tree, name, cache, args.batch)["ops"]
        runs: list[list[dict]] = [[] for _ in trees]
        for k in range(args.warm):
            order = range(len(trees)) if k % 2 == 0 else reversed(range(len(trees)))
            for t in order:
                run = _child(trees[t], name, caches[t], args.batch)
                run.update(tree=trees[t], name=name, load=os.getloadavg()[0])
                runs[t].append(run)
                everything.append(run)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(run) + "\n")
        cells = []
        for t in range(len(trees)):
            cpu = [r["cpu_s"] * 1e3 for r in runs[t]]
            over = [(r["cpu_s"] - r["calls_cpu_s"]) * 1e3 for r in runs[t]]
            wall = [r["setup_s"] * 1e3 for r in runs[t]]
            interp = sum(bool(r.get("interpreted")) for r in runs[t])
            cells.append(f"{_fmt(cpu)}  {statistics.median(over):6.1f}  {_fmt(wall)}  "
                         f"{interp}/{len(runs[t])}")
        print(f"{name:22s} {ops:5d}  " + "    ".join(cells), flush=True)
    print(f"load {os.getloadavg()}", flush=True)
    for line in summary(everything):
        print(line)


TARGET_MS = 20.0


def summary(runs: list[dict]) -> list[str]:
    """Per tree: the workloads within `TARGET_MS`, by the median warm process's CPU and by the
    part of it beside the calls (setup minus the same calls on compiled kernels), worst five."""
    lines = []
    for tree in dict.fromkeys(r["tree"] for r in runs):
        by_name: dict[str, list[dict]] = {}
        for r in runs:
            if r["tree"] == tree:
                by_name.setdefault(r["name"], []).append(r)
        for label, of in (("CPU", lambda r: r["cpu_s"]),
                          ("beside the calls", lambda r: r["cpu_s"] - r["calls_cpu_s"])):
            ms = {n: statistics.median(of(r) for r in rs) * 1e3 for n, rs in by_name.items()}
            worst = sorted(ms, key=ms.get, reverse=True)[:5]
            within = sum(v <= TARGET_MS for v in ms.values())
            lines.append(f"{tree} {label}: median of medians {statistics.median(ms.values()):.1f}"
                         f" ms, within {TARGET_MS:g} ms {within}/{len(ms)}; worst five "
                         + ", ".join(f"{n} {ms[n]:.1f}" for n in worst))
    return lines


if __name__ == "__main__":
    main()
