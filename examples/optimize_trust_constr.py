"""Chained Rosenbrock minimised by SciPy's trust-constr with symgraph's sparse Hessian.

    python examples/optimize_trust_constr.py

symgraph.optimize.minimize compiles the value+gradient kernel (jac=True) and, for
trust-constr, the kernel of the Hessian's structural nonzeros, handed to SciPy as a
scipy.sparse.csr_array (the 3-band pattern here: 3n - 2 entries instead of n^2).
"""

import numpy as np

import symgraph as sg
from symgraph import optimize

n = 200
x = [sg.symbol(f"x{i}") for i in range(n)]
f = sg.apply("add", *[100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(n - 1)])

rows, cols = sg.hessian_sparsity(f, x)
print(f"Hessian pattern: {len(rows)} lower-triangle nonzeros of {n * (n + 1) // 2}")
result = optimize.minimize(f, x, np.full(n, -1.0), method="trust-constr", backend="python",
                           options={"gtol": 1e-10})
print(result.message)
print(f"f* = {result.fun:.3e} after {result.nit} iterations; max |x - 1| = "
      f"{np.abs(result.x - 1).max():.2e}")
