"""The text's TensorFlow 1 program (y = W*x + b, MSE, gradient descent), verbatim but the import.

Only the first line differs from the text (tests/test_text_programs.py checks what it prints
against what TensorFlow 1 / PyTorch print).
"""

import symgraph.static as tf

# Define the computation graph
x = tf.placeholder(tf.float32, name="x")  # Input
W = tf.Variable([2.0], dtype=tf.float32, name="W")  # Weight
b = tf.Variable([1.0], dtype=tf.float32, name="b")  # Bias
y = tf.add(tf.multiply(W, x), b, name="y")  # Linear equation

# Define loss and optimizer
y_true = tf.placeholder(tf.float32, name="y_true")  # Target
loss = tf.reduce_mean(tf.square(y - y_true), name="loss")  # Loss function
optimizer = tf.train.GradientDescentOptimizer(0.01).minimize(loss)  # Optimization

# Execute the graph in a session
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, loss_value = sess.run([optimizer, loss], feed_dict={x: [1.0], y_true: [2.0]})
        print(f"Step {step}: Loss = {loss_value}")
