"""Building kernels (symgraph.runtime.build) goes through records: the derivative products a
function asks for (lower.products) and the backend's capabilities (backends.registry), never
through product or backend names. A product defined here, in the test, compiles through the
same machinery; a backend registered under a new name works without any code knowing it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import symgraph as sg
from symgraph.ad.differentiate import jvp
from symgraph.backends import registry
from symgraph.backends.registry import BACKENDS, Backend
from symgraph.lower.products import (
    VALUE,
    VALUE_GRAD,
    VALUE_GRAD_HESS,
    VALUE_JAC,
    Product,
    products_for,
)
from symgraph.lower.programs import build_programs
from symgraph.runtime.build import build

x, y, z = sg.symbols("x y z")
F = sg.exp(x * y) + sg.sin(z) * x**3 - y / (z + 3.0)
POINT = np.array([0.4, -0.7, 1.3])

# A directional derivative along (1, 1, ..., 1): one more record, nothing else.
ALONG_ONES = Product(
    "value_dir",
    lambda d: [("df_dv", jvp(d.outputs, d.wrt, [1.0] * len(d.wrt))[0])],
    lambda m, k: (1, (1,)), scalar_only=True, about="value and derivative along ones")


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_product_defined_in_a_test_compiles_through_the_same_machinery(backend, tmp_path):
    built = build([F], [x, y, z], [x, y, z], backend=BACKENDS[backend],
                  products=[VALUE_GRAD, ALONG_ONES], cache_dir=tmp_path)
    assert [p.name for p in built.programs] == ["value_grad", "value_dir"]
    assert [label for label, _ in built.programs[1].outputs] == ["f", "df_dv"]
    grad, along = np.empty(4), np.empty(ALONG_ONES.width(1, 3))
    built.rows["value_grad"](POINT, grad)
    built.rows["value_dir"](POINT, along)
    assert along[0] == grad[0]
    np.testing.assert_allclose(along[1], grad[1:].sum(), rtol=1e-14)
    X = np.stack([POINT, POINT * 2.0])
    OUT = np.empty((2, 2))
    built.threaded["value_dir"](X, OUT)
    np.testing.assert_allclose(OUT[0], along, rtol=1e-15)
    # Built again: read back from the expression cache under its own key.
    again = build([F], [x, y, z], [x, y, z], backend=BACKENDS[backend],
                  products=[VALUE_GRAD, ALONG_ONES], cache_dir=tmp_path)
    assert again.programs == built.programs


def test_build_programs_makes_one_program_per_product_in_order():
    programs = build_programs([F], [x, y, z], [x, z], products=[ALONG_ONES, VALUE])
    assert [p.name for p in programs] == ["value_dir", "value"]
    assert build_programs([F], [x, y, z], [x, y, z], True, True) == build_programs(
        [F], [x, y, z], [x, y, z], products=[VALUE, VALUE_GRAD, VALUE_GRAD_HESS])
    with pytest.raises(ValueError, match="need a scalar expression"):
        build_programs([F, x], [x, y, z], [x], products=[VALUE_GRAD])


def test_products_for_what_compile_asks():
    assert products_for(True) == [VALUE, VALUE_GRAD]
    assert products_for(True, hessian=True) == [VALUE, VALUE_GRAD, VALUE_GRAD_HESS]
    assert products_for(False, hessian=True) == [VALUE, VALUE_JAC]
    assert products_for(True, derivatives=False) == [VALUE]
    # Each product's part of its row, for m outputs and k variables.
    assert [p.width(2, 3) for p in (VALUE, VALUE_JAC)] == [2, 8]
    assert [p.width(1, 3) for p in (VALUE_GRAD, VALUE_GRAD_HESS)] == [4, 13]


def test_a_strategy_the_backend_lacks_is_refused_naming_the_choices():
    for strategy in ("tape", "fastest"):
        with pytest.raises(ValueError, match=rf"unknown strategy '{strategy}' for backend "
                                             r"'python'; choose one of \['auto', 'straight'\]"):
            sg.compile(F, [x, y, z], backend="python", strategy=strategy)
    with pytest.raises(ValueError, match=r"choose one of \['auto', 'straight', 'tape'\]"):
        sg.compile(F, [x, y, z], strategy="fastest")
    with pytest.raises(ValueError, match="unknown backend 'fortran'"):
        sg.compile(F, [x, y, z], backend="fortran")


def test_a_backend_registered_under_a_new_name_needs_no_other_code(monkeypatch, tmp_path):
    loaded = []
    python = BACKENDS["python"]
    twin = dataclasses.replace(python, name="python-twin",
                               load=lambda module: loaded.append(module))
    monkeypatch.setitem(registry.BACKENDS, "python-twin", twin)
    fn = sg.compile(F, [x, y, z], backend="python-twin", hessian=True, cache_dir=tmp_path)
    reference = sg.compile(F, [x, y, z], backend="python", hessian=True, cache_dir=tmp_path)
    assert loaded == [fn.module] and fn.strategy == "straight"
    assert fn.value_and_grad(*POINT)[0] == reference.value_and_grad(*POINT)[0]
    np.testing.assert_array_equal(fn.hessian(POINT), reference.hessian(POINT))
    np.testing.assert_array_equal(fn.grad(np.stack([POINT] * 3)),
                                  reference.grad(np.stack([POINT] * 3)))


def test_capabilities_come_from_the_record():
    numba, python = BACKENDS["numba"], BACKENDS["python"]
    assert isinstance(numba, Backend) and numba.strategies == ("straight", "tape")
    assert numba.threaded_batches and numba.chunk_kernels and numba.rows_in_place
    assert not (python.threaded_batches or python.chunk_kernels or python.rows_in_place)
    fn = sg.compile(F, [x, y, z], backend="python")
    assert not fn._built.rows_in_place and fn._built.threaded is fn._built.batches
