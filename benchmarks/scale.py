"""Scale: straight-line Numba kernels vs the tape, stage times, peak memory, CasADi, from 10^3 to
5 * 10^5 expression nodes.

    python benchmarks/scale.py             # default sizes, < 10 minutes; writes results/scale.md
    python benchmarks/scale.py --quick     # one small size, seconds
    python benchmarks/scale.py --sizes 1000,50000 --workloads dag --straight-max 1000

Every measurement runs in a fresh child process (clean peak memory; a straight-line compile
that would take too long is stopped at --straight-timeout). Workloads, sized by distinct
operation nodes (`count_ops`):

* ``dag``: a shared random DAG (each node reuses recent and arbitrary earlier ones), values
  bounded on [-1, 1]^5, so no overflow turns timings into NaN timings;
* ``sum``: sum_i c_i tanh(u_i x_j + sin(v_i x_k)) over 10 inputs: a tree (prints and goes
  through SymPy in linear size), whose gradient is 10 very wide sums.

Times are the best of a few repeats; "per point" is one value-and-gradient evaluation.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import operator
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "scale.md"
UNARY = ("sin", "cos", "atan", "sigmoid")


# -- workloads ------------------------------------------------------------------------------------


def dag(size: int, seed: int = 5):
    from symgraph.ir.evaluate import count_ops
    from symgraph.ir.functions import FUNCTIONS as F
    from symgraph.ir.node import apply, symbols

    rng = random.Random(seed)
    leaves = list(symbols("x0 x1 x2 x3 x4"))
    pool, used = list(leaves), set()
    f = leaves[0]
    while count_ops(f) < size:  # a few rounds: folding and sharing make counts uneven
        for _ in range(int((size - count_ops(f)) * 0.6) + 1):
            a, b = rng.choice(pool[-50:]), rng.choice(pool)
            kind = rng.random()
            if kind < 0.35:
                node, args = 0.5 * (a + b), (a, b)  # averages and products with tanh
            elif kind < 0.7:
                node, args = a * F["tanh"](b), (a, b)  # keep |values| <= 1.6
            else:
                node, args = apply(rng.choice(UNARY), a), (a,)
            used.update(id(n) for n in args)
            pool.append(node)
        f = apply("add", *[n for n in pool if n.args and id(n) not in used])
    return f, leaves


def sum_of_terms(size: int, seed: int = 6):
    from symgraph.ir.functions import FUNCTIONS as F
    from symgraph.ir.node import apply, symbols

    rng = random.Random(seed)
    xs = list(symbols(" ".join(f"x{i}" for i in range(10))))
    terms = []
    for i in range(max(1, size // 6)):
        u, v, c = (rng.uniform(0.1, 1.0) for _ in range(3))
        inner = u * xs[i % 10] + F["sin"](v * xs[(i * 7 + 3) % 10])
        terms.append(c * F["tanh"](inner))
    return apply("add", *terms), xs


WORKLOADS = {"dag": dag, "sum": sum_of_terms}


# -- measuring ----------------------------------------------------------------------------------


def _loop(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - start


def best_time(fn, repeats: int = 3, min_seconds: float = 0.1) -> float:
    """Seconds per call: calls batched to last at least `min_seconds`, best of `repeats`."""
    calls, elapsed = 1, _loop(fn, 1)
    while elapsed < min_seconds and calls < 1 << 20:
        calls *= 4
        elapsed = _loop(fn, calls)
    return min([elapsed] + [_loop(fn, calls) for _ in range(repeats - 1)]) / calls


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def programs_for(f, xs):
    """The value and value-and-gradient programs, as api.build_programs makes them, with the
    gradient built separately so each stage is timed on its own."""
    from symgraph.ad.differentiate import grad
    from symgraph.lower.schedule import schedule_all

    names = [x.value for x in xs]
    t_grad, gradient = timed(lambda: grad(f, xs))
    slots = [("f", f)] + [(f"df_d{n}", g) for n, g in zip(names, gradient)]
    t_schedule, programs = timed(lambda: schedule_all([("value", [("f", f)]),
                                                       ("value_grad", slots)], xs, names))
    return t_grad, t_schedule, programs


def points(n_inputs: int, rows: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1.0, 1.0, (rows, n_inputs))


def per_point(module, n: int, threads: int | None = None) -> tuple[float, float]:
    """Seconds per value-and-gradient: one point at a time, and in a batch (all threads, or
    `threads`) of enough rows to take ~0.2 s."""
    import numba

    x, out = points(n, 2)[1], np.empty(n + 1)
    row = best_time(lambda: module.value_grad_row(x, out))
    rows = max(64, min(4096, int(0.2 / max(row, 1e-9))))
    X, OUT = points(n, rows), np.empty((rows, n + 1))
    everyone = numba.get_num_threads()
    numba.set_num_threads(threads or everyone)
    batch = best_time(lambda: module.value_grad_batch(X, OUT), min_seconds=0) / rows
    numba.set_num_threads(everyone)
    return row, batch


# -- children: one measurement each, in a fresh process ------------------------------------------


def child_pipeline(workload: str, size: int) -> dict:
    """Expression -> gradient -> programs -> source text -> tape -> values, stage by stage."""
    from symgraph.backends.numba.emit import emit_numba
    from symgraph.backends.python import emit_python
    from symgraph.backends.tape.builder import build_tape_module
    from symgraph.ir.evaluate import count_ops

    t_load, _ = timed(child_interpreter)  # once per process: Numba loads its cache
    base = rss_mb()
    t_build, (f, xs) = timed(lambda: WORKLOADS[workload](size))
    nodes = count_ops(f)
    start = time.perf_counter() - t_load  # end to end: expression -> first gradient value
    t_grad, t_schedule, programs = programs_for(f, xs)
    t_tape, module = timed(lambda: build_tape_module(programs))
    X = points(len(xs), 64)
    out = np.empty((64, 1 + len(xs)))
    t_first, _ = timed(lambda: module.value_grad_row(X[0], out[0]))
    e2e = time.perf_counter() - start
    names = [x.value for x in xs]
    t_emit_numba, _ = timed(emit_numba, programs, "f", [], names, "scale")
    t_emit_python, _ = timed(emit_python, programs, "f", [], names, "scale")
    tape = module.tapes["value_grad"]
    row, batch = per_point(module, len(xs))
    batch_1t = per_point(module, len(xs), threads=1)[1]
    module.value_grad_batch(X, out)
    return dict(nodes=nodes, build=t_build, grad=t_grad, schedule=t_schedule, tape=t_tape,
                first_call=t_first, e2e=e2e, emit_numba=t_emit_numba, emit_python=t_emit_python,
                steps=[len(p.steps) for p in programs], ops=[p.op_count for p in programs],
                interpreter_load=t_load, instructions=len(tape.opcodes),
                registers=tape.n_registers, row=row, batch=batch, batch_1t=batch_1t,
                finite=bool(np.isfinite(out).all()), rss_base=base, rss_peak=rss_mb())


def sympy_sum_of_terms(size: int, seed: int = 6):
    """`sum_of_terms` built in SymPy directly, unevaluated (to_sympy and SymPy's automatic
    simplification take ~0.4 ms per node: minutes at this scale)."""
    import sympy as sp

    rng = random.Random(seed)
    xs = sp.symbols(" ".join(f"x{i}" for i in range(10)), real=True)
    mul, add = functools.partial(sp.Mul, evaluate=False), functools.partial(sp.Add,
                                                                            evaluate=False)
    terms = []
    for i in range(max(1, size // 6)):
        u, v, c = (sp.Float(rng.uniform(0.1, 1.0)) for _ in range(3))
        inner = add(mul(u, xs[i % 10]), sp.sin(mul(v, xs[(i * 7 + 3) % 10]), evaluate=False))
        terms.append(mul(c, sp.tanh(inner, evaluate=False)))
    return add(*terms)


def child_api(workload: str, size: int) -> dict:
    """End to end through the public API in a fresh process: compile, then one gradient."""
    import symgraph as sg

    f, xs = WORKLOADS[workload](size)
    x = points(len(xs), 1)[0]
    # Once per process, whatever the expression: Numba's import and the tape's cached kernels
    # (timed apart; the setup below is the expression's own).
    t_load, _ = timed(child_interpreter)
    start, cpu = time.perf_counter(), time.process_time()
    fn = sg.compile(f, xs)  # strategy="auto"
    t_compile, cpu_compile = time.perf_counter() - start, time.process_time() - cpu
    value, _ = fn.value_and_grad(x)
    # CPU time too: what other jobs on a shared machine do not inflate
    return dict(e2e=time.perf_counter() - start, compile=t_compile, strategy=fn.strategy,
                e2e_cpu=time.process_time() - cpu, compile_cpu=cpu_compile,
                interpreter_load=t_load,
                finite=bool(np.isfinite(value)), rss_peak=rss_mb())


def child_frontends(workload: str, size: int) -> dict:
    """Text -> parse and SymPy -> from_sympy, each into an empty node table."""
    from symgraph.frontends.parser import parse
    from symgraph.frontends.sympy_bridge import from_sympy
    from symgraph.ir.evaluate import count_ops
    from symgraph.ir.printer import to_text

    f, _ = WORKLOADS[workload](size)
    nodes = count_ops(f)
    t_print, text = timed(to_text, f, max_length=None)
    del f
    gc.collect()  # the interned nodes die: parsing builds every node anew
    t_parse, parsed = timed(parse, text)
    parsed_nodes = count_ops(parsed)
    del parsed
    gc.collect()
    t_from_sympy = sympy_nodes = None
    if workload == "sum":  # a DAG through SymPy expands: 0.5*(a + b) distributes
        t_from_sympy, converted = timed(from_sympy, sympy_sum_of_terms(size))
        sympy_nodes = count_ops(converted)
    return dict(nodes=nodes, chars=len(text), print=t_print, parse=t_parse,
                parsed_nodes=parsed_nodes, from_sympy=t_from_sympy,
                sympy_nodes=sympy_nodes, rss_peak=rss_mb())


def child_straight(workload: str, size: int) -> dict:
    """The straight-line Numba module: emit, import, compile on first call, evaluate."""
    from symgraph.backends.numba.emit import emit_numba
    from symgraph.backends.registry import BACKENDS
    from symgraph.ir.evaluate import count_ops
    from symgraph.runtime.loading import load_source

    f, xs = WORKLOADS[workload](size)
    start = time.perf_counter()
    _, _, programs = programs_for(f, xs)
    source = emit_numba(programs, "f", [], [x.value for x in xs], "scale")

    def load():
        module = load_source(source)[0]
        BACKENDS["numba"].load(module)  # its cached machine code, as compile loads it
        return module, None

    t_load, (module, _) = timed(load)
    X = points(len(xs), 64)
    out = np.empty((64, 1 + len(xs)))
    t_compile, _ = timed(lambda: module.value_grad_row(X[0], out[0]))
    e2e = time.perf_counter() - start
    t_compile_batch, _ = timed(module.value_grad_batch, X, out)
    row, batch = per_point(module, len(xs))
    return dict(nodes=count_ops(f), steps=len(programs[1].steps), ops=programs[1].op_count,
                load=t_load, compile=t_compile, compile_batch=t_compile_batch, e2e=e2e,
                row=row, batch=batch, rss_peak=rss_mb())


def _to_casadi(f, xs):
    """symgraph DAG -> CasADi SX, iteratively, each distinct node once (benchmarks only)."""
    import casadi as ca

    from symgraph.ir.traversal import topological_order

    x = ca.SX.sym("x", len(xs))
    ops = {"add": lambda *a: functools.reduce(operator.add, a), "neg": operator.neg,
           "mul": lambda *a: functools.reduce(operator.mul, a), "div": operator.truediv,
           "pow": operator.pow, "sigmoid": lambda a: 1 / (1 + ca.exp(-a))}
    value = {id(s): x[i] for i, s in enumerate(xs)}
    for node in topological_order([f]):
        if node.op == "const":
            value[id(node)] = ca.SX(node.value)
        elif node.args:
            op = ops.get(node.op) or getattr(ca, node.op)  # sin, cos, tanh, atan, exp...
            value[id(node)] = op(*[value[id(a)] for a in node.args])
    return x, value[id(f)]


def child_casadi(workload: str, size: int) -> dict:
    import casadi as ca

    from symgraph.ir.evaluate import count_ops

    f, xs = WORKLOADS[workload](size)
    t_convert, (x, expr) = timed(lambda: _to_casadi(f, xs))
    t_function, fn = timed(lambda: ca.Function("f", [x], [expr, ca.gradient(expr, x)]))
    X = points(len(xs), 2)
    t_first, _ = timed(lambda: fn(X[0]))
    value, gradient = fn(X[1])
    row = best_time(lambda: fn(X[1]))
    return dict(nodes=count_ops(f), convert=t_convert, function=t_function, first=t_first,
                row=row, instructions=fn.n_instructions(), version=ca.__version__,
                check=[float(value)] + np.asarray(gradient).ravel().tolist())


def child_interpreter() -> dict:
    """The tape's first use in a process: Numba compiles its functions (once per machine) or
    loads them from its cache (the tape builder's passes, then the row and batch kernels)."""
    from symgraph.backends.tape.builder import build_tape_module
    from symgraph.lower.schedule import NAME, Operand, Program, Step

    x, t0 = Operand(NAME, "x"), Operand(NAME, "t0")
    program = Program("value_grad", ("x",), (Step("t0", "sin", (x,)),), (("f", t0),))
    t_build, module = timed(build_tape_module, [program])
    t_row, _ = timed(module.value_grad_row, np.ones(1), np.empty(1))
    t_batch, _ = timed(module.value_grad_batch, np.ones((2, 1)), np.empty((2, 1)))
    return dict(build=t_build, row=t_row, batch=t_batch, total=t_build + t_row + t_batch)


CHILDREN = {"pipeline": child_pipeline, "api": child_api, "frontends": child_frontends,
            "straight": child_straight, "casadi": child_casadi, "interpreter": child_interpreter}


# -- the parent --------------------------------------------------------------------------------


def run_child(kind: str, args: list[str], timeout: float, env: dict) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, *args]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:200]}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - start
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="one small size (seconds)")
    add("--sizes", help="comma-separated node counts (default 1000,5000,50000,500000)")
    add("--workloads", default="dag,sum")
    add("--straight-max", type=int, default=5_000, help="largest straight-line Numba compile")
    add("--straight-timeout", type=float, default=300.0)
    add("--casadi-size", type=int, default=50_000)
    add("--api-max", type=int, default=50_000, help="largest size through symgraph.compile")
    add("--output", type=Path, default=RESULTS)
    add("--child", nargs="+", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.child:
        kind, *rest = args.child
        result = CHILDREN[kind](*rest[:1], *map(int, rest[1:]))
        print(json.dumps(result))
        return result
    sizes = [int(s) for s in (args.sizes or ("300" if args.quick else
                                             "1000,5000,50000,500000")).split(",")]
    straight_max = min(args.straight_max, 300) if args.quick else args.straight_max
    casadi_size = min(args.casadi_size, max(sizes)) if args.quick else args.casadi_size
    env = {**os.environ, "SYMGRAPH_CACHE_DIR": tempfile.mkdtemp()}  # cold straight-line compiles
    results: dict = {"meta": meta(args, sizes), "runs": []}
    started = time.perf_counter()

    def record(kind: str, workload: str, size: int, timeout: float = 3600,
               child_env: dict | None = None) -> None:
        result = run_child(kind, [workload, str(size)] if size else [], timeout,
                           child_env or env)
        results["runs"].append({"kind": kind, "workload": workload, "size": size, **result})
        print(f"[{time.perf_counter() - started:6.0f} s] {kind:9} {workload:4} {size:>7}: "
              f"{ {k: v for k, v in result.items() if not isinstance(v, list)} }", flush=True)

    if not args.quick:  # the tape's one-time compile, into an empty Numba cache, then a load
        cold = {**env, "NUMBA_CACHE_DIR": tempfile.mkdtemp()}
        record("interpreter", "-", 0, child_env=cold)
        record("interpreter", "warm", 0, child_env=cold)
    for workload in args.workloads.split(","):
        for size in sizes:
            record("pipeline", workload, size)
            if size <= args.api_max:
                record("api", workload, size)
            if workload == "sum":  # the tree prints and goes through SymPy in linear size
                record("frontends", workload, size)
            if size <= straight_max:
                record("straight", workload, size, args.straight_timeout)
            if size == casadi_size and workload == "dag":
                record("casadi", workload, size, 900)
    results["meta"]["minutes"] = (time.perf_counter() - started) / 60
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(markdown(results), encoding="utf-8")
    print(f"wrote {args.output}")
    return results


# -- the report ----------------------------------------------------------------------------------


def _s(t) -> str:
    return "-" if t is None else f"{t * 1e6:.1f} µs" if t < 1e-3 else (
        f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s")


def _runs(results: dict, kind: str, workload: str = "", size: int = 0) -> list[dict]:
    return [r for r in results["runs"] if r["kind"] == kind
            and (not workload or (r["workload"], r["size"]) == (workload, size))]


def _find(results: dict, kind: str, workload: str, size: int) -> dict:
    return next(iter(_runs(results, kind, workload, size)), {})


def _failed(r: dict) -> str | None:
    if "timeout" in r:
        return f"> {r['timeout']:.0f} s (stopped)"
    return f"failed: {r['error']}" if "error" in r else None


def _extrapolate(results: dict, workload: str, ops: int) -> float | None:
    """Straight-line compile time at `ops` operations, from a power law through the two
    largest measured sizes of the workload."""
    done = sorted((r["ops"], r["compile"]) for r in _runs(results, "straight")
                  if r["workload"] == workload and "compile" in r)
    if len(done) < 2 or done[-1][0] == done[-2][0]:
        return None
    (o1, t1), (o2, t2) = done[-2:]
    return t2 * (ops / o2) ** (np.log(t2 / t1) / np.log(o2 / o1))


def _table(header: str, rows: list[list]) -> list[str]:
    cells = header.split(" | ")
    return ["| " + header + " |", "|---|" + "---:|" * (len(cells) - 1)] + [
        "| " + " | ".join(str(c) for c in row) + " |" for row in rows]


STAGES = ("build", "print", "parse", "from_sympy", "grad", "schedule", "emit_numba",
          "emit_python", "tape")


def _stages(results: dict, p: dict) -> dict:
    fe = _find(results, "frontends", p["workload"], p["size"])
    return {k: p.get(k, None if _failed(fe) else fe.get(k)) for k in STAGES}


def markdown(results: dict) -> str:  # noqa: C901 - one report, table by table
    m, ok = results["meta"], [p for p in _runs(results, "pipeline") if not _failed(p)]
    out = ["# Scale: straight-line kernels vs the tape, stage by stage", "",
           f"`{m['command']}` on {m['machine']}, {m['cores']} cores (load average "
           f"{m['load']:.1f} at the start: other jobs shared the machine), Python {m['python']},"
           f" NumPy {m['numpy']}, Numba {m['numba']}, commit {m['commit']}; "
           f"{m.get('minutes', 0):.1f} minutes. Nodes: distinct operation nodes of f "
           "(`count_ops`). Per point: one value-and-gradient evaluation, one point per call; "
           "batch: per point in a parallel batch.", "", "## Kernels for value and gradient", ""]
    rows = []
    for p in ok:
        st = _find(results, "straight", p["workload"], p["size"])
        guess = _extrapolate(results, p["workload"], p["ops"][1])
        straight = ([_failed(st), "", "", ""] if _failed(st) else
                    [f"≈ {_s(guess)} (extrapolated)" if guess else "not run", "", "", ""]
                    if not st else [_s(st[k]) for k in ("compile", "compile_batch", "row",
                                                        "batch")])
        ratio = f"{p['row'] / st['row']:.1f}x" if st and not _failed(st) else "-"
        rows.append([p["workload"], f"{p['nodes']:,}", f"{p['steps'][1]:,}", *straight,
                     _s(p["tape"]), f"{p['instructions']:,}", f"{p['registers']:,}",
                     _s(p["row"]), _s(p["batch"]), ratio])
    out += _table("workload | nodes | gradient steps | straight: compile (row) | compile (batch)"
                  " | per point | batch per point | tape: build | instructions | registers | "
                  "per point | batch per point | tape / straight per point", rows)
    interp = _runs(results, "interpreter")
    if len(interp) == 2 and not any(_failed(r) for r in interp):
        cold, warm = interp
        out += ["", f"The tape's Numba functions compile once per machine: {_s(cold['total'])}"
                f" the first time (builder passes {_s(cold['build'])}, row kernel "
                f"{_s(cold['row'])}, batch kernel {_s(cold['batch'])}); a new process loads "
                f"them from Numba's cache in {_s(warm['total'])}."]
    out += ["", "## End to end: expression to first gradient value", "",
            "Stages in one process (gradient, programs, kernel, first call; the tape column "
            "includes loading the interpreter from Numba's cache), and `symgraph.compile(f)` "
            "(strategy auto) then `value_and_grad` in a fresh process, once Numba and the tape "
            "interpreter are loaded (a fixed cost per process, timed apart).", ""]
    rows = []
    for p in ok:
        st = _find(results, "straight", p["workload"], p["size"])
        api = _find(results, "api", p["workload"], p["size"])
        rows.append([p["workload"], f"{p['nodes']:,}", _s(p["e2e"]),
                     _failed(st) or (_s(st["e2e"]) if st else "not run"),
                     (_failed(api) or f"{_s(api['e2e'])} ({api['strategy']}"
                      + (f"; CPU {_s(api['e2e_cpu'])}" if "e2e_cpu" in api else "") + ")")
                     if api else "-"])
    out += _table("workload | nodes | tape | straight-line Numba | `compile` (auto)", rows)
    out += ["", "## Stages (seconds; µs per node in parentheses)", ""]
    out += _table("workload | nodes | " + " | ".join(STAGES).replace("_", " "), [
        [p["workload"], f"{p['nodes']:,}"] + [
            "-" if c is None else f"{c:.3g} ({c / p['nodes'] * 1e6:.0f})"
            for c in _stages(results, p).values()] for p in ok])
    rows = []
    for workload in dict.fromkeys(p["workload"] for p in ok):
        mine = sorted((p for p in ok if p["workload"] == workload), key=lambda p: p["nodes"])
        if len(mine) >= 2:
            small, big = (_stages(results, p) for p in mine[-2:])
            n_small, n_big = mine[-2]["nodes"], mine[-1]["nodes"]
            rows.append([workload, f"{n_small:,} → {n_big:,}"] + [
                "-" if small[k] is None or big[k] is None else
                f"{(big[k] / n_big) / (small[k] / n_small):.2f}" for k in STAGES])
    out += ["", "Linearity: time per node at the largest size / at the size before (1.00 = "
            "linear).", ""] + _table("workload | nodes | " + " | ".join(STAGES).replace(
                "_", " "), rows)
    out += ["", "## Peak memory (resident set of the measuring process)", ""]
    out += _table("workload | nodes | peak | above the imports | per node", [
        [p["workload"], f"{p['nodes']:,}", f"{p['rss_peak']:.0f} MB",
         f"{p['rss_peak'] - p['rss_base']:.0f} MB",
         f"{(p['rss_peak'] - p['rss_base']) * 1024 / p['nodes']:.1f} KB"] for p in ok])
    for c in _runs(results, "casadi"):
        p = _find(results, "pipeline", c["workload"], c["size"])
        if _failed(c) or not p or _failed(p):
            out += ["", f"CasADi: {_failed(c) or 'no tape run to compare'}"]
            continue
        out += ["", f"## CasADi {c['version']} on the same {c['nodes']:,}-node expression", ""]
        out += _table("kernel | build (convert + gradient + Function) | per gradient | batch "
                      "per point (1 thread) | batch per point (all threads)", [
                          ["CasADi SX Function", _s(c["convert"] + c["function"]),
                           _s(c["row"]), "-", "-"],
                          ["symgraph tape", _s(p["grad"] + p["schedule"] + p["tape"]),
                           _s(p["row"]), _s(p["batch_1t"]), _s(p["batch"])]])
        out += ["", f"CasADi VM instructions: {c['instructions']:,}; tape instructions: "
                f"{p['instructions']:,}. CasADi / tape per gradient: {c['row'] / p['row']:.2f}x "
                f"one point at a time, {c['row'] / p['batch_1t']:.2f}x in a batch on one thread."]
        api = _find(results, "api", c["workload"], c["size"])
        if api and not _failed(api) and "e2e_cpu" in api:
            out += ["", f"Setup, `symgraph.compile(f)` then the first gradient in a fresh "
                    f"process: {_s(api['e2e'])} wall, {_s(api['e2e_cpu'])} of the process's "
                    f"CPU (compile {_s(api['compile'])} wall, {_s(api['compile_cpu'])} CPU), "
                    f"after the process's one-time load of Numba and the tape interpreter "
                    f"({_s(api['interpreter_load'])}); CasADi's gradient and Function: "
                    f"{_s(c['function'])}."]
    return "\n".join(out) + "\n"


def meta(args: argparse.Namespace, sizes: list[int]) -> dict:
    import numba

    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE,
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    return dict(python=platform.python_version(), numpy=np.__version__,
                numba=numba.__version__, machine=platform.machine(), cores=os.cpu_count(),
                load=os.getloadavg()[0], commit=commit, sizes=sizes, quick=args.quick,
                command="python benchmarks/scale.py" + (" --quick" if args.quick else ""))


if __name__ == "__main__":
    main()
