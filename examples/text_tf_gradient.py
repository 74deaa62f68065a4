"""The text's TensorFlow 1 program for y = x^2 + 2x + 1 and tf.gradients, verbatim but the import.

Only the first line differs from the text (tests/test_text_programs.py checks what it prints
against what TensorFlow 1 / PyTorch print).
"""

import symgraph.static as tf

# Define the graph
x = tf.placeholder(tf.float32, name="x")  # Input
y = tf.add(tf.add(tf.square(x), 2 * x), 1, name="y")  # y = x^2 + 2x + 1

# Compute gradient
gradient = tf.gradients(y, x)

# Execute the graph
with tf.Session() as sess:
    result, grad = sess.run([y, gradient], feed_dict={x: 3.0})
    print(f"Result: {result}, Gradient: {grad}")
