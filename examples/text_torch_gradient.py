"""The text's PyTorch program for y = x^2 + 2x + 1 and backward, verbatim but the import.

Only the first line differs from the text (tests/test_text_programs.py checks what it prints
against what TensorFlow 1 / PyTorch print).
"""

import symgraph.dynamic as torch

# Define the input
x = torch.tensor([3.0], requires_grad=True)  # Input

# Compute y = x^2 + 2x + 1
y = x.pow(2) + 2 * x + 1

# Backward pass
y.backward()
print(f"Result: {y.item()}, Gradient: {x.grad.item()}")
