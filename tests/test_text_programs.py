"""The text's three programs (two TensorFlow 1, one PyTorch with its gradient variant), verbatim
but the import line (examples/text_*.py), print what TensorFlow 1 and PyTorch print.

Where the expected lines come from: the originals run once, on 2026-12-01, with
tensorflow-cpu 2.21.0 (``import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()``, the
only way TensorFlow 2 runs TF1 programs), torch 2.13.0+cpu and NumPy 2.4.6, on Python 3.11.
TF prints float32 values (``0.9216000437736511`` is float32's 0.9216 shown as a double, and a
list shows NumPy 2's reprs), so these lines hold only if symgraph computes in float32 as TF
does (graphs/dtypes.py).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import symgraph.static as st

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

PRINTED = {
    "text_tf_model.py": ["Step 0: Loss = 1.0", "Step 1: Loss = 0.9216000437736511",
                         "Step 2: Loss = 0.8493467569351196"],
    "text_tf_gradient.py": ["Result: 16.0, Gradient: [np.float32(8.0)]"],
    "text_torch_model.py": ["Gradient of W: tensor([2.]), Gradient of b: tensor([2.])"],
    "text_torch_gradient.py": ["Result: 16.0, Gradient: 8.0"],
}


@pytest.mark.parametrize("program", sorted(PRINTED))
def test_the_texts_program_prints_what_tensorflow_and_pytorch_print(program, capsys):
    text = (EXAMPLES / program).read_text(encoding="utf-8")
    framework = "tensorflow as tf" if "_tf_" in program else "torch"
    assert f"import {framework}" not in text  # only the import differs (checked below)
    st.reset_default_graph()
    runpy.run_path(str(EXAMPLES / program), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == PRINTED[program]


def test_a_float32_graph_computes_each_step_in_float32():
    # Float64 steps rounded at the end print 0.8493466377258301 at step 2 (one float32 ulp
    # below TensorFlow's): the state and every operation must be float32.
    graph = st.Graph()
    with graph.as_default():
        x = st.placeholder(st.float32, name="x")
        W = st.Variable([2.0], dtype=st.float32, name="W")
        loss = st.reduce_mean(st.square(W * x + 1.0 - 2.0))
        train = st.train.GradientDescentOptimizer(0.01).minimize(loss)
    with st.Session(graph) as sess:
        values = [sess.run([train, loss], {x: [1.0]})[1] for _ in range(3)]
    assert [type(v).__name__ for v in values] == ["float32"] * 3
    assert sess.value(W).dtype.name == "float64"  # kept as float64 holding float32 values
    assert float(sess.value(W)[0]) == float(__import__("numpy").float32(sess.value(W)[0]))
