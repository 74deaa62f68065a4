"""Gamma regression by maximum likelihood: the negative log-likelihood over data, its gradient
and Hessian from symgraph (lgamma, digamma and polygamma(1, .) appear in them), fitted with
SciPy's trust-region Newton method.

Model: y_i ~ Gamma(shape k, mean mu_i), log mu_i = b0 + b1 * x_i, k = exp(s). Per point,
-log p(y_i) = lgamma(k) - k log(k / mu_i) - (k - 1) log y_i + k y_i / mu_i.
Needs SciPy (``pip install scipy``); the check at the end compares with scipy.stats.
"""

import numpy as np
from scipy import optimize, stats

import symgraph as sg

rng = np.random.default_rng(19)
n = 300
x = rng.uniform(0.0, 2.0, n)
true_b0, true_b1, true_k = 0.5, 0.8, 3.0
y = rng.gamma(true_k, np.exp(true_b0 + true_b1 * x) / true_k)

b0, b1, s = sg.symbols("b0 b1 s")
k = sg.exp(s)
# The data enter as constants: one term per point, and n * lgamma(k) once.
terms = [k * (b0 + b1 * xi) + k * yi * sg.exp(-(b0 + b1 * xi)) for xi, yi in zip(x, y)]
nll = n * (sg.lgamma(k) - k * s) + sg.apply("add", *terms) - (k - 1.0) * float(np.log(y).sum())

print("d nll / d s =", sg.to_text(sg.diff(nll, s))[:90], "...")
fn = sg.compile(nll, [b0, b1, s], backend="python", hessian=True)

fit = optimize.minimize(lambda p: fn(*p), np.zeros(3), jac=lambda p: fn.grad(*p),
                        hess=lambda p: fn.hessian(*p), method="trust-exact")
est_b0, est_b1, est_s = fit.x
errors = np.sqrt(np.diag(np.linalg.inv(fn.hessian(*fit.x))))  # observed information
print(f"converged: {fit.success} in {fit.nit} iterations, nll = {fit.fun:.6f}")
print(f"b0 = {est_b0:.4f} +- {errors[0]:.4f}   (true {true_b0})")
print(f"b1 = {est_b1:.4f} +- {errors[1]:.4f}   (true {true_b1})")
print(f"k  = {np.exp(est_s):.4f}               (true {true_k})")
print("gradient at the optimum:", np.array2string(fn.grad(*fit.x), precision=2))

# Oracle: SciPy's own Gamma log-density at the fitted parameters.
mu = np.exp(est_b0 + est_b1 * x)
shape = np.exp(est_s)
reference = -stats.gamma.logpdf(y, shape, scale=mu / shape).sum()
print(f"scipy.stats nll at the fit: {reference:.6f} (difference {abs(reference - fit.fun):.1e})")
assert abs(reference - fit.fun) < 1e-8 * abs(reference)
