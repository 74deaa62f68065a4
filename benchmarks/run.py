"""symgraph against its peers on a fixed suite of workloads; prints a table and writes
benchmarks/results/results.{md,json,png}.

    python -m benchmarks.run                  # everything installed (pip install -e ".[bench]")
    python -m benchmarks.run --quick          # tiny: 2 workloads, small batches, 1 repeat
    python -m benchmarks.run --only mlp,random_dag --peers jax,torch --repeats 3

Each tool runs in its own worker process (benchmarks/worker.py), one tool at a time, so setups
are cold, thread settings do not leak between tools, and a runaway peer can be stopped: slow
setups are time-boxed (``--limit``) and reported as "> limit". symgraph runs first; its values
and gradients are the reference every peer must match before its times count.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # `python benchmarks/run.py`: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import report  # noqa: E402
from benchmarks.measure import BATCH_TARGET_S  # noqa: E402
from benchmarks.peers import IMPORTS  # noqa: E402
from benchmarks.worker import MARK  # noqa: E402
from benchmarks.workloads import WORKLOADS, workload  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PEERS = ["handwritten", "sympy", "symengine", "jax", "torch", "casadi"]
WARM = {"symgraph", "handwritten", "jax"}  # tools with an on-disk cache of compiled code
LABELS = {"symgraph": ["symgraph"], "handwritten": ["hand-written Numba"],
          "sympy": ["SymPy lambdify NumPy", "SymPy lambdify + numba.njit"],
          "symengine": ["SymEngine Lambdify LLVM"], "jax": ["JAX jit"],
          "torch": ["PyTorch autograd"], "casadi": ["CasADi SX Function"]}
VERSIONS = ["symgraph", "numpy", "numba", "llvmlite", "sympy", "scipy", "symengine", "jax",
            "jaxlib", "torch", "casadi"]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny run: 2 workloads, 2,000 "
                        "points, 1 repeat, 30 s limit")
    parser.add_argument("--repeats", type=int, help="repeats per timing (median); default 5")
    parser.add_argument("--only", help=f"workloads, comma-separated: {', '.join(WORKLOADS)}")
    parser.add_argument("--families", help="generated workloads (benchmarks/families.py): "
                        "'all', 'fit', 'validate' or comma-separated family names, each at "
                        "every size of --sizes; replaces the suite unless --only is given too")
    parser.add_argument("--sizes", default="10,100,1000,5000",
                        help="operation counts the --families are built at")
    parser.add_argument("--peers", default="all",
                        help=f"'all', 'none' or comma-separated: {', '.join(PEERS)}")
    parser.add_argument("--batch", type=int, help="points per batch; default 100,000")
    parser.add_argument("--limit", type=float, help="seconds a peer's setup may take; "
                        "default 60")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the results")
    parser.add_argument("--verbose", action="store_true", help="show the workers' stderr")
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (1 if args.quick else 5)
    args.batch = args.batch or (2_000 if args.quick else 100_000)
    args.limit = args.limit or (30.0 if args.quick else 60.0)
    quick = [n for n, w in WORKLOADS.items() if "quick" in w.tags]
    args.workloads = args.only.split(",") if args.only else quick if args.quick else list(
        WORKLOADS)
    unknown = sorted(set(args.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    if args.families:
        args.generated = generated(parser, args.families, args.sizes)
        args.workloads = (args.workloads if args.only else []) + list(args.generated)
    args.tools = ["symgraph"] + (PEERS if args.peers == "all" else [] if args.peers == "none"
                                 else args.peers.split(","))
    if set(args.tools) - set(LABELS):
        parser.error(f"unknown peers {sorted(set(args.tools) - set(LABELS))}")
    return args


def generated(parser: argparse.ArgumentParser, which: str, sizes: str) -> dict:
    """The generated workloads: ``family@n`` -> (target operation count, actual count)."""
    from benchmarks import families

    chosen = {"all": list(families.FAMILIES), "fit": families.FIT,
              "validate": families.VALIDATE}.get(which, which.split(","))
    unknown = sorted(set(chosen) - set(families.FAMILIES))
    if unknown:
        parser.error(f"unknown families {unknown}; choose from {list(families.FAMILIES)}")
    try:
        targets = tuple(int(s) for s in sizes.split(","))
    except ValueError:
        parser.error(f"--sizes takes comma-separated integers, not {sizes!r}")
    return families.sizes(targets, chosen)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        if line.startswith(MARK):
            lines.put(json.loads(line[len(MARK):]))
    lines.put(None)


class Runner:
    """Starts workers (one tool at a time) and collects their records."""

    def __init__(self, args: argparse.Namespace, scratch: Path) -> None:
        self.args, self.scratch = args, scratch
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "NUMBA_CACHE_DIR": str(scratch / "numba"), "BENCH_JAX_CACHE": str(scratch / "jax"),
            "SYMGRAPH_CACHE_DIR": str(scratch / "symgraph")}
        # Python caches bytecode by default (the generated modules' too); some sandboxes turn
        # that off, which would add source compiles to every warm setup.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)

    def precompile(self) -> float:
        """`symgraph precompile` into the run's empty Numba cache: a once-per-machine step,
        timed and reported apart from the setups of the workloads."""
        began = time.monotonic()
        subprocess.run([sys.executable, "-m", "symgraph", "precompile"], cwd=ROOT, env=self.env,
                       check=True, capture_output=True, timeout=600)
        return round(time.monotonic() - began, 1)

    def command(self, *extra: str) -> list[str]:
        a = self.args
        return [sys.executable, "-m", "benchmarks.worker", "--repeats", str(a.repeats),
                "--batch", str(a.batch), "--limit", str(a.limit),
                "--cache-dir", str(self.scratch / "symgraph"), *extra]

    def hard_limit(self, tool: str, stage: str = "setup") -> float:
        """Seconds before a silent worker is stopped: the time box cannot interrupt a long
        C call (an XLA compile), so setup gets the limit plus a grace; timing gets more."""
        if tool in ("symgraph", "handwritten"):
            return 3600.0
        # setup = the time-boxed prepare, then the time-boxed first batch call
        return 2 * self.args.limit + 30 if stage == "setup" else 4 * self.args.limit + 300

    def start(self, cmd: list[str], tool: str) -> tuple[subprocess.Popen, queue.Queue]:
        err = None if self.args.verbose else open(self.scratch / f"{tool}.log", "a")  # noqa: SIM115
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
                                env=self.env, preexec_fn=_big_stack)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        return proc, lines

    def tool(self, tool: str, workloads: list[str], refs: Path | None) -> list[dict]:
        """Run `tool` over `workloads`; a worker that dies or overruns is replaced."""
        records: list[dict] = []
        remaining = list(workloads)
        while remaining:
            extra = ["--tool", tool, "--workloads", ",".join(remaining)]
            proc, lines = self.start(self.command(*extra, *(["--refs", str(refs)] if refs
                                                             else [])), tool)
            current, deadline, stage = None, None, "setup"
            received: set[str] = set()  # labels with a result for the current workload
            while True:
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    item = lines.get(timeout=wait)
                except queue.Empty:  # overran the hard limit: stop this worker (ours)
                    proc.kill()
                    proc.wait()
                    records += [{**_failure(tool, current, "timeout", f"{stage} > "
                                            f"{self.hard_limit(tool, stage):.0f} s (stopped)"),
                                 "label": label} for label in LABELS[tool] if label not in received]
                    break
                if item is None:
                    code = proc.wait()
                    if current is not None:
                        records += [{**_failure(tool, current, "error", f"worker exited with "
                                                f"code {code}"), "label": label}
                                    for label in LABELS[tool] if label not in received]
                    if code == 0:
                        remaining = []
                    break
                if item["event"] == "start":
                    current, stage, received = item["workload"], "setup", set()
                    remaining.remove(current)
                    deadline = time.monotonic() + self.hard_limit(tool)
                elif item["event"] == "setup_done":
                    stage = "timing"
                    deadline = time.monotonic() + self.hard_limit(tool, stage)
                elif item["event"] == "result":
                    item.pop("event")
                    item["tool"] = tool
                    if item.get("label") == tool:  # setup failed before the rows existed
                        records += [{**item, "label": label} for label in LABELS[tool]]
                        received.update(LABELS[tool])
                    else:
                        records.append(item)
                        received.add(item["label"])
                    stage = "setup"  # a tool's next row (SymPy has two) starts its own setup
                    deadline = time.monotonic() + self.hard_limit(tool)
                    log(f"  {tool:11s} {item['workload']:14s} {item.get('label', ''):28s} "
                        f"{item['status']} {item.get('message', '')}")
                elif item["event"] == "done":
                    current, remaining = None, []
        return records

    def warm(self, tool: str, records: list[dict]) -> None:
        """Setup again in fresh processes per workload, from the caches the cold run filled:
        the median of `--repeats` processes (one process's figure moves by 10-20 ms on a
        shared VM: a stall of its own, not the tool's; every sample is kept)."""
        if tool not in WARM:
            for r in records:
                r["warm_note"] = "no disk cache"
            return
        for name in dict.fromkeys(r["workload"] for r in records if r["status"] == "ok"):
            found = []
            for _ in range(max(1, self.args.repeats)):
                cmd = self.command("--warm", tool, "--workloads", name)
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                          env=self.env, timeout=self.hard_limit(tool))
                except subprocess.TimeoutExpired:
                    break
                events = [json.loads(line[len(MARK):]) for line in proc.stdout.splitlines()
                          if line.startswith(MARK)]
                found += [e for e in events if e.get("event") == "warm"]
            found.sort(key=lambda f: f["setup_warm_s"])
            for r in records:
                if r["workload"] == name and r["status"] == "ok":
                    if found:
                        median = found[(len(found) - 1) // 2]  # (the lower one of an even count)
                        r["setup_warm_s"] = median["setup_warm_s"]
                        r["warm_stages"] = median["stages"]
                        r["warm_import_s"] = median["import_s"]
                        r["warm_samples_s"] = [f["setup_warm_s"] for f in found]
                    else:
                        r["warm_note"] = "warm run failed"


def _big_stack() -> None:
    # The worker raises Python's recursion limit for SymPy; give its main thread the C stack
    # for it (the soft limit only; set before exec, so the child's stack can grow).
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_STACK)
        want = 1 << 30 if hard == resource.RLIM_INFINITY else min(hard, 1 << 30)
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    except (ImportError, ValueError, OSError):
        pass


def _failure(tool: str, workload: str | None, status: str, message: str) -> dict:
    return {"tool": tool, "label": LABELS[tool][0], "workload": workload, "status": status,
            "message": message}


def installed(tool: str) -> str | None:
    missing = [m for m in IMPORTS.get(tool, []) if importlib.util.find_spec(m) is None]
    return f"not installed ({', '.join(missing)}; pip install -e '.[bench]')" if missing else None


def meta(args: argparse.Namespace, argv: list[str] | None) -> dict:
    versions = {"python": platform.python_version()}
    for name in VERSIONS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown CPU")
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{os.cpu_count()} CPUs ({cpu}), {platform.system()} "
                       f"{platform.machine()}",
            "versions": versions, "repeats": args.repeats, "batch": args.batch,
            "batch_target_s": BATCH_TARGET_S,
            "limit_s": args.limit, "workloads": args.workloads, "tools": args.tools,
            "titles": {n: workload(n).title for n in args.workloads},
            "generated": getattr(args, "generated", {}),
            "command": "python -m benchmarks.run" + "".join(
                f" {a}" for a in (sys.argv[1:] if argv is None else argv)),
            "load_start": _load(), "tool_seconds": {}, "symgraph_commit": _commit()}


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "symgraph"], cwd=ROOT,
                               text=True, capture_output=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + (" + uncommitted symgraph/ changes" if dirty else "") if head else "unknown"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    started = time.monotonic()
    info = meta(args, argv)
    scratch = Path(tempfile.mkdtemp(prefix="symgraph-bench-"))
    runner, rows = Runner(args, scratch), []
    try:
        refs_path = scratch / "refs.json"
        for tool in args.tools:
            names = [n for n in args.workloads
                     if tool != "handwritten" or workload(n).handwritten]
            missing = installed(tool)
            if missing:
                rows += [{**_failure(tool, n, "skipped", missing), "label": label}
                         for n in names for label in LABELS[tool]]
                log(f"{tool}: {missing}")
                continue
            log(f"{tool}: {', '.join(names)}")
            if tool == "symgraph" and not args.quick:  # (a tiny run's setups mean nothing)
                info["symgraph_precompile_s"] = runner.precompile()
            began = time.monotonic()
            records = runner.tool(tool, names, None if tool == "symgraph" else refs_path)
            runner.warm(tool, records)
            info["tool_seconds"][tool] = round(time.monotonic() - began, 1)
            if tool == "symgraph":
                refs = {r["workload"]: r["reference"] for r in records if "reference" in r}
                refs_path.write_text(json.dumps(refs))
            rows += records
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    info.update(load_end=_load(), duration_s=time.monotonic() - started)
    results = {"meta": info, "rows": rows}
    paths = report.write(results, args.out)
    text = report.markdown(results)
    print(text)
    log("wrote " + ", ".join(str(p) for p in paths))
    return results


if __name__ == "__main__":
    main()
