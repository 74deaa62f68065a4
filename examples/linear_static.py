"""The text's TensorFlow program, define-then-run: y = W * x + b, MSE, gradient descent.

symgraph.static is spelled like TensorFlow 1 (no TensorFlow is involved): the graph below is
built once, `minimize` fuses forward pass, gradient and update into one compiled kernel, and
each `sess.run` is one call of it. The loss printed is the loss before each update.

Printing: the text's TensorFlow computed in float32 and printed 0.84934656; symgraph computes in
float64, where the same loss is 0.8493465599999995, so it is printed rounded to 8 significant
digits (about float32's precision).
"""

import symgraph.static as tf
from symgraph.pictures.draw import scene, to_ascii

# Define the computation graph
x = tf.placeholder("x", shape=(1,))  # Input
W = tf.Variable([2.0], name="W")  # Weight
b = tf.Variable([1.0], name="b")  # Bias
y = tf.add(tf.multiply(W, x), b, name="y")  # Linear equation

# Define loss and optimizer
y_true = tf.placeholder("y_true", shape=(1,))  # Target
loss = tf.reduce_mean(tf.square(y - y_true), name="loss")  # Loss function
optimizer = tf.GradientDescentOptimizer(0.01).minimize(loss)  # Optimization

# Execute the graph in a session
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, loss_value = sess.run([optimizer, loss], feed_dict={x: [1.0], y_true: [2.0]})
        print(f"Step {step}: Loss = {float(f'{loss_value:.8g}')}")

print()
# What the one step kernel computes: the loss and the updated variables, sharing [t0].
outputs = loss.flat_nodes() + [n for _, new in optimizer.updates for n in new.flat_nodes()]
print(to_ascii(scene(outputs, ["loss"] + [f"new {v.name}" for v, _ in optimizer.updates])))
