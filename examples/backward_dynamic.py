"""The text's PyTorch program: one backward pass through y = W * x + b and the MSE loss.

symgraph.dynamic is spelled like PyTorch (no PyTorch is involved). `.grad` is a tensor; the
text's output prints its number, so the example reads it with `.item()`.
"""

import symgraph.dynamic as torch
from symgraph.pictures.draw import scene, to_ascii

# Define parameters
x = torch.tensor([1.0], requires_grad=True, name="x")  # Input
W = torch.tensor([2.0], requires_grad=True, name="W")  # Weight
b = torch.tensor([1.0], requires_grad=True, name="b")  # Bias

# Forward pass
y = W * x + b  # Linear equation

# Loss function
y_true = torch.tensor([2.0], name="y_true")  # Target
loss = (y - y_true).pow(2).mean()  # Mean squared error

# Backward pass
loss.backward()  # Calculate gradients
print(f"Gradient of W: {W.grad.item()}, Gradient of b: {b.grad.item()}")

print()
# The graph recorded while the lines above ran, and what backward() differentiated.
print(to_ascii(scene(loss.graph.flat_nodes(), ["loss"], grad=True,
                     wrt=W.graph.flat_nodes() + b.graph.flat_nodes())))
