"""Wide output rows of big batches leave a lane kernel as whole cache lines, stored
non-temporally (backends.numba.runtime.transpose): the same bits as row by row, in every
alignment, shape and size the kernel may meet."""

import platform

import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.numba.runtime import transpose
from symgraph.runtime import outputs


@pytest.mark.parametrize("width", [8, 9, 13, 16, 17, 23, 40, 77, 101])
def test_line_shuffles_cut_a_group_of_eight_rows_into_its_lines_in_order(width):
    starts = transpose.runs(width, 8)
    # Run vector r * len(starts) + q holds row r's columns starts[q] .. starts[q] + 7.
    vectors = [[(r, k0 + lane) for lane in range(8)] for r in range(8) for k0 in starts]
    flat = []
    for first, second, mask in transpose.line_shuffles(width):
        both = vectors[first] + vectors[second]
        flat += [both[i] for i in mask]
    assert flat == [divmod(i, width) for i in range(8 * width)]


def _wide(n: int):
    """A chain energy of n springs: 2n inputs, 2n + 1 outputs, arithmetic only (exact bits)."""
    q, v = sg.symbols(" ".join(f"q{i}" for i in range(n))), sg.symbols(
        " ".join(f"v{i}" for i in range(n)))
    kinetic = sum((0.5 + 0.1 * i) * vi**2 for i, vi in enumerate(v))
    springs = sum(0.5 * (b - a)**2 + 0.25 * (b - a)**4 for a, b in zip(q, q[1:]))
    return kinetic - springs, [*q, *v]


def _offset(shape, skip_bytes):
    """An array of `shape` starting `skip_bytes` past a cache line."""
    size = int(np.prod(shape))
    block = np.empty(size + 16)
    start = (-block.ctypes.data % 64 + skip_bytes) // 8
    return block[start:start + size].reshape(shape)


@pytest.mark.numba
@pytest.mark.parametrize("n", [4, 5, 20, 38])
def test_streamed_rows_give_the_row_kernels_bits_at_any_alignment(n, monkeypatch, tmp_path):
    # Streaming from the first byte (STREAM_BYTES 0, read when the kernel compiles), so small
    # batches take the path: aligned OUT streams whole lines, OUT 8 or 40 bytes past a line
    # and an OUT with a spare column store row by row. 2n + 1 columns of output (n = 4: 9
    # columns, a run and an overlapping one; n = 38: 77).
    monkeypatch.setattr(transpose, "STREAM_BYTES", 0)
    expr, args = _wide(n)
    fn = sg.compile(expr, args, strategy="straight", cache_dir=tmp_path)
    module = fn.module
    rows = 2 * 64 + 13  # whole blocks, whole groups of 8 and a ragged end
    X = np.random.default_rng(n).uniform(-1, 1, (rows, len(args)))
    ref = np.empty((rows, len(args) + 1))
    for i in range(rows):
        module.value_grad_row(X[i], ref[i])
    for skip in (0, 8, 40):
        out = _offset(ref.shape, skip)
        out[:] = 12345.0
        module.value_grad_batch(X, out)
        assert out.tobytes() == ref.tobytes()
    wider = np.full((rows, len(args) + 2), 12345.0)
    assert module.value_grad_chunks(X, wider, np.zeros(2, np.int64)) == 0
    assert wider[:, :-1].tobytes() == ref.tobytes() and (wider[:, -1] == 12345.0).all()


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 assembly")
def test_a_wide_lane_kernel_has_non_temporal_stores_and_a_fence(tmp_path):
    expr, args = _wide(20)
    fn = sg.compile(expr, args, strategy="straight", cache_dir=tmp_path)
    X = np.random.default_rng(1).uniform(-1, 1, (100, len(args)))
    fn.module.value_grad_batch(X, np.empty((100, len(args) + 1)))
    asm = "\n".join(fn.module.value_grad_chunks.inspect_asm().values())
    assert "vmovntpd" in asm and "sfence" in asm


@pytest.mark.numba
def test_the_api_streams_a_big_batch_into_an_aligned_array_with_the_points_results():
    expr, args = _wide(20)
    fn = sg.compile(expr, args)
    X = np.random.default_rng(2).uniform(-1, 1, (20_000, len(args)))  # 6.6 MB of results
    value, grad = fn.value_and_grad(X)
    assert value.__array_interface__["data"][0] % 64 == 0  # the first of each row's results
    for i in (0, 7, 8, 9999, 19_999):
        v, g = fn.value_and_grad(X[i])
        assert value[i] == v and (grad[i] == g).all()
    assert outputs.ALIGNED_BYTES <= transpose.STREAM_BYTES
