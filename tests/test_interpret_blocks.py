"""An interpreted batch runs in blocks whose temporaries stay in malloc's heap between blocks
(runtime.blocks): before, glibc handed them back to the system after every block and the next
block faulted them in again, two thirds of the batch's time."""

import ctypes
import json
import os
import subprocess
import sys

import pytest

from symgraph.runtime import blocks

FAULTS = """
import json, resource, sys
import numpy as np
import symgraph as sg

xs = sg.symbols(" ".join(f"x{i}" for i in range(48)))
expr = sum((0.3 * a * b - 0.7) / ((a - b) ** 2 + 1.0) for a, b in zip(xs, xs[1:] + xs[:1]))
fn = sg.compile(expr, list(xs), cache_dir=sys.argv[1])  # cold: its batches run interpreted
X = np.empty((20_000, 48))
np.random.default_rng(0).random(out=X)  # (no big array freed first: that would raise
# glibc's thresholds itself, as a temporary of uniform(-1, 1, shape) does)
faults = []
for _ in range(2):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn.value_and_grad(X)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
pending = fn._built.pending["value_grad"]
from symgraph.runtime import blocks
print(json.dumps({"faults": faults, "made": fn._built.made, "ops": pending.ops,
                  "kept": blocks._kept[0]}))
"""

HEAP = """
import ctypes, json, sys
import numpy as np
from symgraph.runtime import blocks

class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
                .split()]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
if sys.argv[1] == "keep":
    blocks.keep_heap()
kept = []
for _ in range(3):  # as a block's NumPy kernel: 2,000 temporaries of 4 KiB, freed together
    temps = [np.ones(512) for _ in range(2_000)]
    before = libc.mallinfo2().arena
    del temps
    kept.append(libc.mallinfo2().arena / before)  # of the heap, what stays mapped
print(json.dumps(kept))
"""


def test_block_rows_keep_a_blocks_temporaries_within_the_kept_heap():
    assert blocks.KEPT_HEAP_BYTES < 32 << 20  # glibc raises its threshold for no bigger chunk
    assert blocks.BLOCK_BYTES <= 2 * blocks.KEPT_HEAP_BYTES  # under the raised trim threshold
    previous = blocks.MAX_ROWS
    for ops in (1, 10, 100, 1_000, 1_500, 1_600, 3_000, 10_000, 100_000):
        rows = blocks.block_rows(ops)
        assert blocks.MIN_ROWS <= rows <= previous and rows & (rows - 1) == 0
        assert 8 * ops * rows <= blocks.BLOCK_BYTES or rows == blocks.MIN_ROWS
        previous = rows
    assert blocks.block_rows(300) == blocks.MAX_ROWS


def _run(script: str, *args: str) -> str:
    # glibc's defaults: a MALLOC_*_ variable (dask's distributed sets MALLOC_TRIM_THRESHOLD_ on
    # import, and this process may have imported it) fixes glibc's thresholds for good.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                         timeout=300, check=True, env=env)
    return out.stdout.strip().splitlines()[-1]


def _glibc_with_mallinfo2() -> bool:
    try:
        return hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="glibc's malloc (2.33 or later)")
def test_a_kept_heap_holds_a_blocks_freed_temporaries_for_the_next_block():
    # 8 MB of temporaries freed at once: glibc unmaps what is free at its heap's top past its
    # trim threshold (128 KiB in a new process), which the next block faults in again.
    assert min(json.loads(_run(HEAP, "keep"))) > 0.99  # none handed back
    assert min(json.loads(_run(HEAP, "plain"))) < 0.9  # (what the first test guards against)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_an_interpreted_batch_does_not_fault_in_its_blocks_memory_again(tmp_path):
    # ~900 operations, 20,000 points: ~15 MB of temporaries a block of 2,048 rows, ~3,600
    # pages, faulted in again by every block were they handed back. (Whether a process that
    # does not keep its heap hands them back depends on what it freed before: the test above
    # shows the mechanism; this one, that interpreted batches use it.)
    result = json.loads(_run(FAULTS, str(tmp_path)))
    assert not result["made"] and result["ops"] > 200  # both batches ran interpreted
    assert result["kept"]
    out_pages = 20_000 * 49 * 8 // 4096  # the new value and gradient arrays, faulted in
    assert result["faults"][1] < out_pages + 1_000, result  # its heap kept from the first


def test_the_python_backends_batches_run_in_blocks_and_give_every_rows_numbers(monkeypatch):
    import numpy as np

    import symgraph as sg
    from symgraph.runtime import build

    starts = []
    run = blocks.run_blocks
    monkeypatch.setattr(blocks, "block_rows", lambda ops: 64)  # 3 blocks and a part of one
    monkeypatch.setattr(build, "run_blocks", lambda *a: starts.append(len(a[1])) or run(*a))
    x, y = sg.symbols("x y")
    fn = sg.compile(sg.exp(x * y) / (1.0 + y**2) + sg.sin(x), [x, y], backend="python")
    X = np.random.default_rng(1).uniform(-1.0, 1.0, (3 * 64 + 5, 2))
    value, grad = fn.value_and_grad(X)
    assert starts == [len(X)]
    for i, point in enumerate(X):
        v, g = fn.value_and_grad(*point)
        assert value[i] == pytest.approx(v, rel=1e-15) and grad[i] == pytest.approx(g, rel=1e-15)
