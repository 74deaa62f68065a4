"""Batch outputs come from recycled memory only once nothing refers to the earlier result."""

import gc

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime import outputs

BIG = (40_000, 10)  # 3.2 MB


@pytest.fixture(autouse=True)
def empty_pool(monkeypatch):
    monkeypatch.setattr(outputs, "MIN_BYTES", 1 << 20)  # small blocks, quick tests
    outputs.release()
    yield
    outputs.release()


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_a_dropped_result_memory_is_reused_by_the_next_batch_of_its_size():
    first = outputs.empty(BIG)
    address = _address(first)
    del first
    assert outputs.idle_bytes() == 8 * BIG[0] * BIG[1] + outputs.LINE
    assert _address(outputs.empty(BIG)) == address


def test_memory_is_not_reused_while_any_view_of_the_result_lives():
    first = outputs.empty(BIG)
    first[:] = 1.0
    column, rows = first[:, 0], first[5:9]
    del first
    second = outputs.empty(BIG)
    second[:] = 2.0
    assert (column == 1.0).all() and (rows == 1.0).all()
    del column
    assert outputs.idle_bytes() == 0  # `rows` still holds it
    del rows
    assert outputs.idle_bytes() == 8 * BIG[0] * BIG[1] + outputs.LINE


def test_small_and_huge_arrays_are_numpys_own_never_kept():
    small = outputs.empty((10, 10))
    assert small.base is None
    huge_rows = outputs.MAX_IDLE_BYTES // 80 + 1
    huge = outputs.empty((huge_rows, 10))
    assert huge.shape == (huge_rows, 10) and huge.base is not None and huge.base.base is None
    del small, huge
    assert outputs.idle_bytes() == 0


def test_kept_memory_never_exceeds_the_cap(monkeypatch):
    monkeypatch.setattr(outputs, "MAX_IDLE_BYTES", 7 << 20)  # room for two 3.2 MB blocks
    arrays = [outputs.empty(BIG) for _ in range(4)]
    del arrays
    gc.collect()
    assert outputs.idle_bytes() == 2 * (8 * BIG[0] * BIG[1] + outputs.LINE)


@pytest.mark.parametrize("rows", [40_000, 70_000, outputs.MAX_IDLE_BYTES // 80 + 1])
def test_big_arrays_start_on_a_cache_line_so_kernels_write_whole_lines(rows):
    array = outputs.empty((rows, 10))  # pooled (3.2 MB), fresh (5.6 MB), past the pool
    assert _address(array) % 64 == 0 and array.shape == (rows, 10)
    assert array.flags.c_contiguous and array.flags.writeable


def test_a_block_is_reused_only_for_an_array_of_at_least_half_its_size():
    outputs.empty(BIG)  # dropped at once
    assert outputs.idle_bytes() > 0
    smaller = outputs.empty((15_000, BIG[1]))  # 1.2 MB: under half the block, a new one
    assert smaller.base is not None and outputs.idle_bytes() > 0
    half = outputs.empty((21_000, BIG[1]))  # 1.68 MB: over half, takes the block
    assert outputs.idle_bytes() == 0 and half.base is not None


def test_api_batches_in_a_loop_give_fresh_results_each_time():
    x, y = sg.symbols("x y")
    fn = sg.compile(sg.exp(x) * y + x * y**2, [x, y])
    rng = np.random.default_rng(1)
    X1, X2 = rng.random((50_000, 2)), rng.random((50_000, 2))
    v1, g1 = fn.value_and_grad(X1)
    v2, g2 = fn.value_and_grad(X2)  # v1/g1 still alive: another block
    assert not np.shares_memory(g1, g2)
    expected = np.exp(X1[:, 0]) * X1[:, 1] + X1[:, 0] * X1[:, 1] ** 2
    np.testing.assert_allclose(v1, expected, rtol=1e-13)
    address = _address(g2.base) if g2.base is not None else None
    del v2, g2
    v3, g3 = fn.value_and_grad(X2)  # reuses the block just freed
    assert address is None or _address(g3.base) == address
    np.testing.assert_allclose(g3[:, 1], np.exp(X2[:, 0]) + 2 * X2[:, 0] * X2[:, 1],
                               rtol=1e-13)
