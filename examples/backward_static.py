"""One backward pass of the text's linear model, define-then-run (TensorFlow-1 spelling).

`tf.gradients` builds d loss / d W and d loss / d b as graph nodes that share the forward
ones; the session compiles loss and gradients into one kernel and runs it once.
"""

import symgraph.static as tf
from symgraph.pictures.draw import scene, to_ascii

x = tf.placeholder("x", shape=(1,))  # Input
W = tf.Variable([2.0], name="W")  # Weight
b = tf.Variable([1.0], name="b")  # Bias
y = tf.add(tf.multiply(W, x), b, name="y")  # Linear equation
y_true = tf.placeholder("y_true", shape=(1,))  # Target
loss = tf.reduce_mean(tf.square(y - y_true), name="loss")  # Loss function
grad_W, grad_b = tf.gradients(loss, [W, b])  # Gradient calculation

with tf.Session() as sess:
    gW, gb = sess.run([grad_W, grad_b], feed_dict={x: [1.0], y_true: [2.0]})
    print(f"Gradient of W: {gW.item()}, Gradient of b: {gb.item()}")

print()
print(to_ascii(scene(loss.flat_nodes(), ["loss"], grad=True,
                     wrt=W.flat_nodes() + b.flat_nodes())))
