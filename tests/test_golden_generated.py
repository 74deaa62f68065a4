"""The checked-in files under generated/ are exactly what symgraph generates today."""

from __future__ import annotations

from pathlib import Path

import pytest

import symgraph as sg

GENERATED = Path(__file__).resolve().parent.parent / "generated"


def polynomial(backend: str) -> sg.CompiledFunction:
    (x,) = sg.symbols("x")
    return sg.compile(x**2 + 2 * x + 1, [x], hessian=True, backend=backend)


def linear_mse(backend: str) -> sg.CompiledFunction:
    # The text's model y = W*x + b with squared error against y_true; parameters W and b.
    W, b, x, y_true = sg.symbols("W b x y_true")
    loss = (W * x + b - y_true) ** 2
    return sg.compile(loss, [W, b, x, y_true], wrt=[W, b], backend=backend)


CASES = {"polynomial": polynomial, "linear_mse": linear_mse}


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_file_is_byte_identical_to_checked_in_golden(case, backend, update_golden):
    source = CASES[case](backend).source
    golden = GENERATED / f"{case}_{backend}.py"
    if update_golden:
        golden.write_text(source, encoding="utf-8")
    assert golden.read_text(encoding="utf-8") == source


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_golden_kernels_compute_the_texts_numbers(backend):
    poly = polynomial(backend)
    assert poly.value_and_grad(3.0)[0] == 16.0
    assert poly.grad(3.0).tolist() == [8.0]
    assert poly.hessian(3.0).tolist() == [[2.0]]
    mse = linear_mse(backend)
    # W=2, b=1, x=1, y_true=2: loss (3-2)^2 = 1, dL/dW = 2*(y-t)*x = 2, dL/db = 2
    value, gradient = mse.value_and_grad(2.0, 1.0, 1.0, 2.0)
    assert (value, gradient.tolist()) == (1.0, [2.0, 2.0])
