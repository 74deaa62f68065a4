"""Jacobian of the n-link pendulum on a cart's forcing vector, symgraph against SymPy.

    python benchmarks/pendulum_jacobian.py              # n = 4, 10; writes results/pendulum.md
    python benchmarks/pendulum_jacobian.py --links 10   # one size

The equations of motion come from sympy.physics.mechanics (Kane's method); both contenders start
from the same SymPy forcing vector F(q, u) and end with the first numeric Jacobian dF/d(q, u):

* SymPy: ``F.jacobian(states)`` then ``lambdify(..., cse=True)`` and one call;
* symgraph: ``from_sympy`` (shared subtrees once), ``compile(F, wrt=states)`` (derivatives,
  schedule, code or tape, kernel) and one ``jacobian`` call; "auto" picks the kernel strategy.

Each contender runs in a fresh process, so imports and caches are counted the same way, and a
Numba cache folder is made empty for the run. Results agree to 1e-9 or the row says so.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "pendulum.md"


def forcing_vector(links: int):
    """Kane's-method forcing vector of an n-link pendulum on a cart, in plain symbols."""
    import sympy as sp
    import sympy.physics.mechanics as me

    from benchmarks.workloads import pendulum_on_cart

    force = me.dynamicsymbols("F")
    g, t = sp.symbols("g t")
    masses = sp.symbols(f"m:{links + 1}")
    lengths = sp.symbols(f"l:{links}")
    frame, q, u, particles = pendulum_on_cart(links, masses, lengths)
    # The cart is pushed along x; gravity pulls every particle.
    loads = [(p.point, -p.mass * g * frame.y) for p in particles]
    loads[0] = (particles[0].point, force * frame.x - masses[0] * g * frame.y)
    kane = me.KanesMethod(frame, q_ind=q, u_ind=u,
                          kd_eqs=[qi.diff(t) - ui for qi, ui in zip(q, u)])
    kane.kanes_equations(particles, loads)
    states = sp.symbols(f"q0:{links + 1}") + sp.symbols(f"u0:{links + 1}")
    plain = dict(zip([*q, *u], states)) | {force: sp.Symbol("F")}
    forcing = kane.forcing.xreplace(plain)
    params = [sp.Symbol("F"), g, *masses, *lengths]
    return forcing, list(states), params


def _point(states, params):
    import numpy as np

    rng = np.random.default_rng(0)
    return np.r_[rng.uniform(-1, 1, len(states)), 0.5, 9.81, rng.uniform(0.5, 2, len(params) - 2)]


def run_sympy(links: int) -> dict:
    import sympy as sp

    forcing, states, params = forcing_vector(links)
    start = time.perf_counter()
    jacobian = forcing.jacobian(states)
    function = sp.lambdify([*states, *params], jacobian, modules="numpy", cse=True)
    value = function(*_point(states, params))
    return {"seconds": time.perf_counter() - start, "jacobian": value.tolist()}


def run_symgraph(links: int) -> dict:
    import symgraph as sg
    from symgraph.frontends.sympy_bridge import from_sympy_matrix

    forcing, states, params = forcing_vector(links)
    start = time.perf_counter()
    outputs = [row[0] for row in from_sympy_matrix(forcing)]
    args = [sg.symbol(s.name) for s in [*states, *params]]
    fn = sg.compile(outputs, args, wrt=args[: len(states)])
    value = fn.jacobian(_point(states, params))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "jacobian": value.tolist(), "strategy": fn.strategy,
            "nodes": sg.count_ops(outputs), "ops": fn.op_counts()}


def _child(kind: str, links: int, cache: str) -> dict:
    code = (f"import os, json, sys; sys.path.insert(0, {str(HERE.parent)!r}); "
            f"os.environ['SYMGRAPH_CACHE_DIR'] = {cache!r}; "
            f"from benchmarks.pendulum_jacobian import run_{kind} as run; "
            f"print(json.dumps(run({links})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    import tempfile

    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", default="4,10", help="comma-separated n (default 4,10)")
    options = parser.parse_args(argv)
    rows = []
    for links in [int(n) for n in options.links.split(",")]:
        with tempfile.TemporaryDirectory() as cache:
            ours = _child("symgraph", links, cache)
        theirs = _child("sympy", links, cache)
        agree = np.allclose(ours["jacobian"], theirs["jacobian"], rtol=1e-9, atol=1e-9)
        rows.append(f"| {links} | {ours['nodes']:,} | {ours['ops'].get('value_jac', 0):,} | "
                    f"{ours['strategy']} | {ours['seconds']:.2f} s | {theirs['seconds']:.2f} s | "
                    f"{theirs['seconds'] / ours['seconds']:.1f}x | {'yes' if agree else 'NO'} |")
        print(rows[-1], flush=True)
    table = "\n".join([
        "| links n | forcing-vector op nodes | Jacobian kernel ops | symgraph kernel | symgraph "
        "end to end | SymPy jacobian + lambdify(cse) | SymPy / symgraph | same numbers |",
        "|---:|---:|---:|---|---:|---:|---:|---|", *rows])
    note = (f"\n\nFrom the SymPy forcing vector to the first Jacobian value, each in a fresh "
            f"process (imports and Numba compile included); {platform.machine()}, Python "
            f"{platform.python_version()}. `python benchmarks/pendulum_jacobian.py`.\n")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(table + note, encoding="utf-8")
    print(table + note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
