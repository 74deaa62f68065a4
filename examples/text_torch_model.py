"""The text's PyTorch program (y = W*x + b, MSE, backward), verbatim but the import.

Only the first line differs from the text (tests/test_text_programs.py checks what it prints
against what TensorFlow 1 / PyTorch print).
"""

import symgraph.dynamic as torch

# Define parameters
x = torch.tensor([1.0], requires_grad=True)  # Input
W = torch.tensor([2.0], requires_grad=True)  # Weight
b = torch.tensor([1.0], requires_grad=True)  # Bias

# Forward pass
y = W * x + b  # Linear equation

# Loss function
y_true = torch.tensor([2.0])  # Target
loss = (y - y_true).pow(2).mean()  # Mean squared error

# Backward pass
loss.backward()  # Calculate gradients
print(f"Gradient of W: {W.grad}, Gradient of b: {b.grad}")
