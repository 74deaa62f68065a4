"""The text's model define-by-run (PyTorch style), trained like the TensorFlow program.

symgraph.dynamic is spelled like PyTorch (no PyTorch is involved): every line computes its value
at once, the graph is recorded on the way and rebuilt on every step, and `backward` fills
`.grad`. The loss printed is the loss before each update, as in linear_static.py, rounded to 8
significant digits for the same reason (float64 gives 0.8493465599999995 at step 2).
"""

import symgraph.dynamic as torch
from symgraph.pictures.draw import scene, to_ascii

# Define parameters
x = torch.tensor([1.0], name="x")  # Input
W = torch.tensor([2.0], requires_grad=True, name="W")  # Weight
b = torch.tensor([1.0], requires_grad=True, name="b")  # Bias
y_true = torch.tensor([2.0], name="y_true")  # Target
optimizer = torch.SGD([W, b], lr=0.01)

for step in range(3):
    optimizer.zero_grad()
    y = W * x + b  # Linear equation, recorded as it runs
    loss = (y - y_true).pow(2).mean()  # Mean squared error
    loss.backward()  # Calculate gradients
    optimizer.step()
    print(f"Step {step}: Loss = {float(f'{loss.item():.8g}')}")

print()
# The graph recorded during the last step (rebuilt on every step), and what backward() added.
print(to_ascii(scene(loss.graph.flat_nodes(), ["loss"], grad=True,
                     wrt=W.graph.flat_nodes() + b.graph.flat_nodes())))
