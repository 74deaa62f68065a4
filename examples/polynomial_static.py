"""The text's TensorFlow polynomial: y = x**2 + 2*x + 1 and dy/dx at x = 3, define-then-run.

symgraph.static is spelled like TensorFlow 1 (no TensorFlow is involved). Here x is a scalar
placeholder (shape ()), so fetched values are 0-d numbers.
"""

import symgraph.static as tf
from symgraph.pictures.draw import scene, to_ascii

# Define the graph
x = tf.placeholder("x")  # Input (a scalar)
y = tf.add(tf.add(tf.square(x), 2 * x), 1, name="y")  # y = x^2 + 2x + 1

# Compute gradient
gradient = tf.gradients(y, x)

# Execute the graph
with tf.Session() as sess:
    result, grad = sess.run([y, gradient], feed_dict={x: 3.0})
    print(f"Result: {result}, Gradient: {grad[0]}")

print()
print(to_ascii(scene(y.flat_nodes(), ["y"])))
