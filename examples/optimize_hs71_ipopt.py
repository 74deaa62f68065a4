"""Hock-Schittkowski problem 71 solved by IPOPT (cyipopt) on symgraph expressions.

    python examples/optimize_hs71_ipopt.py

    min  x1 x4 (x1 + x2 + x3) + x3
    s.t. x1 x2 x3 x4 >= 25,  x1^2 + x2^2 + x3^2 + x4^2 = 40,  1 <= x <= 5

The published optimum is f* = 17.0140173. symgraph hands IPOPT the gradient, the constraints'
sparse Jacobian (values in `jacobianstructure` order) and the lower triangle of the Lagrangian
Hessian sigma*Hf + sum(lam_i*Hg_i) (in `hessianstructure` order).

IPOPT is optional. To install it (Debian/Ubuntu):
    apt-get install coinor-libipopt-dev liblapack-dev libblas-dev pkg-config
    pip install cyipopt
"""

import importlib.util
import sys

import symgraph as sg
from symgraph import optimize

if importlib.util.find_spec("cyipopt") is None:
    print("cyipopt is not installed: apt-get install coinor-libipopt-dev liblapack-dev "
          "libblas-dev pkg-config; pip install cyipopt")
    sys.exit(0)

x1, x2, x3, x4 = x = sg.symbols("x1 x2 x3 x4")
constraints = [{"type": "ineq", "fun": x1 * x2 * x3 * x4 - 25},
               {"type": "eq", "fun": x1**2 + x2**2 + x3**2 + x4**2 - 40}]
result = optimize.minimize(x1 * x4 * (x1 + x2 + x3) + x3, x, [1.0, 5.0, 5.0, 1.0],
                           method="ipopt", constraints=constraints, bounds=[(1.0, 5.0)] * 4,
                           backend="python")
print(result.message.decode() if isinstance(result.message, bytes) else result.message)
print(f"f* = {result.fun:.7f} (published: 17.0140173) at x = {result.x.round(8)}")
