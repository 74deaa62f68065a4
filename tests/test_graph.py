"""The DAG itself: interning, stable digests, traversal order, the op table's product rule."""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import symgraph as sg
from symgraph.ir import intern, traversal
from symgraph.ir import node as graph
from symgraph.ir.ops import OPS

x, y, z = sg.symbols("x y z")


def test_equal_expressions_built_twice_are_one_node():
    assert sg.sin(x * y) + 1 is 1 + sg.sin(y * x)
    assert sg.const(-0.0) is not sg.const(0.0)  # the sign of zero is kept apart
    assert sg.const(math.nan) is sg.const(math.nan)


def test_expressions_nobody_holds_leave_the_intern_table():
    gc.collect()
    before = graph.interned_count()
    w = sg.symbol("fresh_w")
    chain = w
    for k in range(200):
        chain = sg.sin(chain) * (k + 2.5)
    assert graph.interned_count() >= before + 400
    del chain, w
    gc.collect()
    assert graph.interned_count() == before
    assert sum(map(len, intern._TABLES.values())) == before  # dead entries are removed


def test_an_order_walked_in_a_stage_is_reused_as_the_next_walks_prefix_and_let_go_after():
    from symgraph.ir import traversal

    gc.collect()
    before = graph.interned_count()
    w, v = sg.symbols("fresh_a fresh_b")
    f = w
    for k in range(150):
        f = sg.sin(f * v) + (k + 1.5) * f
    gradient = sg.grad(f, [w, v])

    @traversal.bulk
    def stage(f, gradient):
        alone = traversal.topological_order([f])
        assert traversal._WALKED[0][0] is f  # kept while the stage runs
        reused = traversal.topological_prefixes([f, *gradient])
        traversal._WALKED[0] = None
        walked = traversal.topological_prefixes([f, *gradient])  # from nothing kept
        assert reused == walked and walked[0][:len(alone)] == alone
        return reused

    order, ends = stage(f, gradient)
    assert traversal._WALKED == [None, False]  # the stage ended: no graph is held
    assert traversal.topological_prefixes([f, *gradient]) == (order, ends)  # (and none kept)
    assert traversal._WALKED[0] is None
    del f, gradient, w, v, order, ends
    gc.collect()
    assert graph.interned_count() == before


DIGEST_SCRIPT = ("import symgraph as sg; x, y = sg.symbols('x y'); "
                 "print((sg.sin(x * y) + 2.5 / y).digest.hex())")


def test_digests_are_the_same_in_every_process():
    here = (sg.sin(x * y) + 2.5 / y).digest.hex()
    for seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT], capture_output=True,
                              text=True, env=env, check=True)
        assert done.stdout.strip() == here


def test_topological_order_lists_each_node_once_after_its_arguments():
    shared = sg.exp(x * y)
    f = shared * shared + sg.sin(shared) + x
    order = traversal.topological_order([f, shared, x])
    assert len(order) == len(set(order))
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        assert all(position[a] < position[node] for a in node.args)
    assert order[-1] is f
    assert traversal.topological_order([x]) == [x]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7])
def test_product_partials_are_the_products_of_the_other_factors(n):
    factors = sg.symbols(",".join(f"a{i}" for i in range(n)) + ",")  # a tuple, also of one
    values = np.random.default_rng(n).uniform(0.5, 2.0, size=n)
    partials = OPS["mul"].partials(factors, None)
    env = dict(zip(factors, values))
    for i, partial in enumerate(partials):
        expected = np.prod(np.delete(values, i))
        got = partial if not isinstance(partial, sg.Node) else sg.evaluate(partial, env)
        assert float(got) == pytest.approx(expected, rel=1e-14)


def test_bulk_pauses_the_cycle_collector_and_restores_it():
    seen = []

    @traversal.bulk
    def inner():
        seen.append(gc.isenabled())

    @traversal.bulk
    def failing():
        inner()
        raise RuntimeError("boom")

    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        failing()
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        inner()
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()


def test_bulk_leaves_its_graph_unscanned_in_the_oldest_generation_and_cycles_collectable():
    import weakref

    class Cycle:
        pass

    @traversal.bulk
    def build():
        expr = x
        for i in range(3000):  # thousands of new objects: a full young generation
            expr = sg.sin(expr) * (i + 0.5)
        loop = Cycle()
        loop.me = loop  # garbage only the cycle collector can free
        return expr, weakref.ref(loop)

    gc.collect()
    expr, loop = build()
    [[] for _ in range(2000)]  # enough allocations for young collections to run
    # They did not walk the stage's objects (its cycle is not found: without the move, the
    # first one after the stage scanned them all and freed it)...
    assert loop() is not None
    gc.collect()
    assert loop() is None  # ...a full collection does
    assert expr.op == "mul"
    gc.freeze()  # the process's own frozen objects stay frozen
    try:
        before = gc.get_freeze_count()
        build()
        assert gc.get_freeze_count() == before
    finally:
        gc.unfreeze()
