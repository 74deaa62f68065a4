"""The text's second example, y = x**2 + 2*x + 1 at x = 3, in symgraph's own API.

Prints the value and the gradient from one fused kernel, for both backends, and where the
generated code lives so you can open it.
"""

import symgraph as sg

x = sg.symbol("x")
y = x**2 + 2 * x + 1

print(f"y = {y}")
print(f"dy/dx = {sg.grad(y, [x])[0]}")
for backend in ("python", "numba"):
    fn = sg.compile(y, [x], backend=backend)
    value, gradient = fn.value_and_grad(3.0)
    print(f"{backend:>6}: value {value}, gradient {gradient[0]}   ({fn.path})")
