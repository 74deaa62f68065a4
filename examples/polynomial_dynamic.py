"""The text's PyTorch polynomial: y = x**2 + 2*x + 1 and dy/dx at x = 3, define-by-run.

symgraph.dynamic is spelled like PyTorch (no PyTorch is involved). The last lines freeze the
same computation into a compiled static function (like torch.compile) and check it agrees.
"""

import symgraph.dynamic as torch
from symgraph.pictures.draw import scene, to_ascii

# Define the input
x = torch.tensor([3.0], requires_grad=True, name="x")  # Input

# Compute y = x^2 + 2x + 1
y = x.pow(2) + 2 * x + 1

# Backward pass
y.backward()
print(f"Result: {y.item()}, Gradient: {x.grad.item()}")

print()
print(to_ascii(scene(y.graph.flat_nodes(), ["y"])))

# The same function, traced once and compiled (one kernel gives value and gradient).
frozen = torch.freeze(lambda x: x.pow(2) + 2 * x + 1, 3.0)
value, (gradient,) = frozen.value_and_grad(3.0)
print()
print(f"Frozen: Result: {value}, Gradient: {gradient.item()}")
