"""An interpreted batch runs in blocks whose temporaries stay in malloc's heap between blocks
(runtime.blocks): before, glibc handed them back to the system after every block and the next
block faulted them in again, two thirds of the batch's time."""

import json
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
import json, resource, sys
import numpy as np
from symgraph.runtime import blocks
if sys.argv[1] == "keep":
    blocks.keep_heap()
def block():  # as a block's NumPy kernel: 2,000 temporaries of 4 KiB, freed together
    temps = [np.ones(512) for _ in range(2_000)]
    return len(temps)
block()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    block()
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before))
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
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                         timeout=300, check=True)
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_kept_heap_holds_a_blocks_freed_temporaries_for_the_next_block():
    # 5 blocks of 8 MB: ~1,000-2,000 page faults each in a new process (its memory handed
    # back to the system when the block frees it), none once the heap is kept.
    assert json.loads(_run(HEAP, "keep")) < 200
    assert json.loads(_run(HEAP, "plain")) > 2_000  # (what the first test guards against)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_an_interpreted_batch_does_not_fault_in_its_blocks_memory_again(tmp_path):
    # ~900 operations, 20,000 points: ~15 MB of temporaries a block of 2,048 rows, ~3,600
    # pages, faulted in again by every block were they handed back.
    result = json.loads(_run(FAULTS, str(tmp_path)))
    assert not result["made"] and result["ops"] > 200  # both batches ran interpreted
    assert result["kept"]
    assert result["faults"][1] < 2_000, result  # its heap, kept from the first batch
