"""Robertson's stiff chemical kinetics by SciPy's BDF with symgraph's compiled Jacobian.

    python examples/integrate_robertson.py

The rate constants are parameters (symbols given as `params`, values as SciPy's `args`), so
one compiled right-hand side and Jacobian serve every set of rates.
"""

import numpy as np

import symgraph as sg
from symgraph import integrate

t, y1, y2, y3, k1, k2, k3 = sg.symbols("t y1 y2 y3 k1 k2 k3")
rhs = [-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2**2 - k3 * y2 * y3, k2 * y2**2]
solution = integrate.solve_ivp(rhs, t, [y1, y2, y3], (0.0, 4e10), [1.0, 0.0, 0.0],
                               method="BDF", params=[k1, k2, k3], args=(0.04, 3e7, 1e4),
                               rtol=1e-6, atol=1e-10, backend="python")
print(solution.message)
print(f"y(4e10) = {solution.y[:, -1]}; mass balance error {abs(solution.y[:, -1].sum() - 1):.1e}")
print(f"{solution.nfev} right-hand sides, {solution.njev} Jacobians, {solution.nlu} LU")
assert np.all(np.isfinite(solution.y))
