"""The compile API: point forms, batches, derivative kinds, caching, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.tape import interpreter as tape_interpreter
from symgraph.runtime.loading import default_cache_dir

BACKENDS = ["python", "numba"]
x, y, z = sg.symbols("x y z")


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def test_point_given_as_floats_array_or_names_gives_the_same_value(backend):
    fn = sg.compile(x * y**2 + sg.sin(x), [x, y], backend=backend)
    expected = 3.0 * 4.0 + np.sin(3.0)
    assert fn(3.0, 2.0) == pytest.approx(expected, rel=1e-15)
    assert fn([3.0, 2.0]) == pytest.approx(expected, rel=1e-15)
    assert fn(np.array([3.0, 2.0])) == pytest.approx(expected, rel=1e-15)
    assert fn(x=3.0, y=2.0) == pytest.approx(expected, rel=1e-15)


def test_batch_rows_match_single_points(backend):
    fn = sg.compile(sg.exp(x) * sg.cos(y) + x * y, [x, y], hessian=True, backend=backend)
    points = np.random.default_rng(0).uniform(-2, 2, size=(50, 2))
    values, grads = fn.value_and_grad(points)
    hessians = fn.hessian(points)
    assert values.shape == (50,) and grads.shape == (50, 2) and hessians.shape == (50, 2, 2)
    for i in (0, 17, 49):
        v, g = fn.value_and_grad(points[i])
        assert values[i] == v and np.array_equal(grads[i], g)
        assert np.array_equal(hessians[i], fn.hessian(points[i]))
    assert np.array_equal(fn(points), values)


def test_gradient_and_hessian_have_the_analytic_values(backend):
    fn = sg.compile(x**3 * y + sg.log(y), [x, y], backend=backend)
    v, g = fn.value_and_grad(2.0, 3.0)
    assert v == pytest.approx(24 + np.log(3.0))
    assert g == pytest.approx([3 * 4 * 3, 8 + 1 / 3])
    assert fn.hessian(2.0, 3.0) == pytest.approx(np.array([[6 * 2 * 3, 12], [12, -1 / 9]]))


def test_vector_expression_gives_values_and_jacobian(backend):
    fn = sg.compile([x * y, x + sg.exp(y), z], [x, y, z], backend=backend)
    assert fn(2.0, 0.0, 5.0).tolist() == [0.0, 3.0, 5.0]
    assert fn.jacobian(2.0, 0.0, 5.0).tolist() == [[0, 2, 0], [1, 1, 0], [0, 0, 1]]
    assert fn.jacobian(np.ones((4, 3))).shape == (4, 3, 3)


def test_wrt_subset_differentiates_only_the_parameters(backend):
    W, b, data = sg.symbols("W b data")
    fn = sg.compile((W * data + b) ** 2, [W, b, data], wrt=[W, b], backend=backend)
    value, gradient = fn.value_and_grad(2.0, 1.0, 3.0)
    assert value == 49.0 and gradient.tolist() == [2 * 7 * 3, 2 * 7]


def test_text_and_sympy_expressions_compile_like_nodes(backend):
    import sympy

    sx = sympy.Symbol("x")
    from_text = sg.compile("x**2 + 2*x + 1", backend=backend)
    from_sympy = sg.compile(sx**2 + 2 * sx + 1, backend=backend)
    assert from_text.value_and_grad(3.0) == from_sympy.value_and_grad(3.0)
    assert from_text.value_and_grad(3.0)[0] == 16.0


def test_constant_outputs_broadcast_over_a_batch(backend):
    fn = sg.compile(2 * x + 1, [x, y], backend=backend)
    values, grads = fn.value_and_grad(np.zeros((3, 2)))
    assert values.tolist() == [1.0] * 3 and grads.tolist() == [[2.0, 0.0]] * 3


def test_expression_without_variables_compiles(backend):
    fn = sg.compile(sg.const(2.5), [], backend=backend)
    assert fn() == 2.5 and fn.grad().shape == (0,)


def test_wrong_point_sizes_and_names_raise_clear_errors():
    fn = sg.compile(x + y, [x, y], backend="python")
    with pytest.raises(ValueError, match="expected 2 value"):
        fn(1.0)
    with pytest.raises(TypeError, match="missing \\['y'\\]"):
        fn(x=1.0)
    with pytest.raises(TypeError, match="unknown \\['w'\\]"):
        fn(x=1.0, y=2.0, w=3.0)
    with pytest.raises(ValueError, match="not one of the arguments"):
        sg.compile(x + y, [x], backend="python")
    with pytest.raises(ValueError, match="unknown backend"):
        sg.compile(x, [x], backend="fortran")
    with pytest.raises(TypeError, match="scalar"):
        sg.compile([x, y], backend="python").value_and_grad(1.0, 2.0)


def test_source_and_path_point_to_the_real_generated_file(backend):
    import inspect

    fn = sg.compile(sg.tanh(x) * y, [x, y], backend=backend)
    assert fn.path.read_text() == fn.source
    assert fn.path.parent == default_cache_dir()
    row = fn.module.value_grad_row
    assert "def value_grad_row" in inspect.getsource(getattr(row, "py_func", row))


def test_second_process_reuses_the_numba_cache_without_compiling(tmp_path):
    script = textwrap.dedent(f"""
        import json, symgraph as sg
        x, y = sg.symbols("x y")
        fn = sg.compile(sg.exp(x) * sg.sin(y) + x**3, [x, y], cache_dir={str(tmp_path)!r},
                        strategy="straight")  # (auto interprets a first call)
        v, g = fn.value_and_grad(1.0, 2.0)
        row = fn.module.value_grad_point  # the kernel a call with floats runs
        print(json.dumps({{"hits": sum(row.stats.cache_hits.values()),
                           "misses": sum(row.stats.cache_misses.values()),
                           "value": v, "grad": g.tolist()}}))
    """)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                      text=True, check=True).stdout) for _ in range(2)]
    assert runs[0]["misses"] == 1 and runs[0]["hits"] == 0
    assert runs[1]["hits"] == 1 and runs[1]["misses"] == 0
    assert runs[0]["value"] == runs[1]["value"] and runs[0]["grad"] == runs[1]["grad"]


def test_op_counts_show_the_fused_kernel_shares_forward_work():
    fn = sg.compile(sg.exp(sg.sin(x) * y), [x, y], backend="python")
    counts = fn.op_counts()
    assert counts["value"] == 3
    assert counts["value_grad"] <= 4 * counts["value"] + 2


def test_empty_wrt_compiles_only_the_value_kernel_and_gives_empty_derivatives(backend):
    fn = sg.compile(x * y, [x, y], wrt=[], backend=backend)
    assert [p.name for p in fn.programs] == ["value"]
    value, gradient = fn.value_and_grad(2.0, 3.0)
    assert value == 6.0 and gradient.shape == (0,)
    assert fn.value_and_grad(np.ones((4, 2)))[1].shape == (4, 0)
    vector = sg.compile([x * y, x + y], [x, y], wrt=[], backend=backend)
    assert vector.jacobian(np.ones((3, 2))).shape == (3, 2, 0)


def test_tape_strategy_agrees_with_straight_line_kernels_and_prints_its_steps():
    f = sg.exp(x * y) + sg.sin(x) / y + sg.hypot(x, z) * sg.where(x > y, z, x)
    tape = sg.compile(f, [x, y, z], strategy="tape", hessian=True)
    straight = sg.compile(f, [x, y, z], strategy="straight", hessian=True)
    assert (tape.strategy, straight.strategy) == ("tape", "straight")
    points = np.random.default_rng(3).uniform(-2, 2, size=(20, 3))
    for ours, theirs in zip(tape.value_and_grad(points), straight.value_and_grad(points)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    np.testing.assert_allclose(tape.hessian(points), straight.hessian(points), rtol=1e-13)
    assert "exp(" in tape.source and tape.path is None
    with pytest.raises(ValueError, match=r"unknown strategy 'tape' for backend 'python'; "
                       r"choose one of \['auto', 'straight'\]"):
        sg.compile(f, [x, y, z], backend="python", strategy="tape")
    with pytest.raises(ValueError, match="unknown strategy"):
        sg.compile(f, [x, y, z], strategy="fastest")


def test_every_spelling_of_a_point_gives_the_same_answer_and_one_kernel_signature(backend):
    # Numba: the straight-line kernels (auto's interpreted first calls: the python case)
    fn = sg.compile(x * y**2 + sg.sin(x), [x, y], backend=backend,
                    strategy="straight" if backend == "numba" else "auto")
    expected_value = 3.0 * 4.0 + np.sin(3.0)
    expected_grad = [4.0 + np.cos(3.0), 12.0]
    readonly = np.array([3.0, 2.0])
    readonly.flags.writeable = False
    unaligned = np.frombuffer(bytearray(17), dtype=np.float64, count=2, offset=1)
    unaligned[:] = [3.0, 2.0]
    spellings = [((3.0, 2.0), {}), ((3, 2), {}), ((3.0, 2), {}),
                 ((np.float64(3.0), 2.0), {}), (([3.0, 2.0],), {}), (((3, 2),), {}),
                 ((np.array([3.0, 2.0]),), {}), ((np.array([3.0, 2.0], np.float32),), {}),
                 ((np.array([3.0, 0.0, 2.0])[::2],), {}), ((readonly,), {}), ((unaligned,), {}),
                 ((), {"y": 2.0, "x": 3.0})]
    for values, named in spellings:
        value, gradient = fn.value_and_grad(*values, **named)
        assert type(value) is float and type(gradient) is np.ndarray
        assert value == pytest.approx(expected_value, rel=1e-15)
        assert gradient.tolist() == pytest.approx(expected_grad, rel=1e-15)
        assert fn(*values, **named) == value and fn.grad(*values, **named).tolist() == (
            gradient.tolist())
    if backend == "numba":  # the API hands every point to the row kernel in one form
        assert len(fn.module.value_grad_row.signatures) == 1
        assert len(fn.module.value_row.signatures) == 1


@pytest.mark.parametrize("strategy", ["straight", "tape"])
def test_every_spelling_of_a_batch_gives_the_same_bits_and_one_kernel_signature(strategy):
    fn = sg.compile(x * y**2 + sg.sin(x), [x, y], strategy=strategy)
    X = np.random.default_rng(5).uniform(-2, 2, size=(300, 2))
    readonly = X.copy()
    readonly.flags.writeable = False
    unaligned = np.frombuffer(bytearray(X.nbytes + 1), dtype=np.float64, count=X.size,
                              offset=1).reshape(X.shape)
    unaligned[:] = X
    expected = fn.value_and_grad(X)
    for spelling in (readonly, unaligned, np.asfortranarray(X), X.tolist(),
                     np.hstack([X, X])[:, :2]):
        values, grads = fn.value_and_grad(spelling)
        assert values.tobytes() == expected[0].tobytes()
        assert grads.tobytes() == expected[1].tobytes()
    kernel = (fn.module.value_grad_chunks if strategy == "straight" else
              tape_interpreter.run_batch)
    arrays = [t for signature in kernel.signatures for t in signature if hasattr(t, "layout")]
    assert all(t.layout == "C" and t.mutable and t.aligned for t in arrays)
    if strategy == "straight":
        assert len(kernel.signatures) == 1


def test_each_call_returns_fresh_arrays(backend):
    fn = sg.compile(x * y, [x, y], backend=backend)
    _, first = fn.value_and_grad(2.0, 3.0)
    _, second = fn.value_and_grad(5.0, 7.0)
    assert first.tolist() == [3.0, 2.0] and second.tolist() == [7.0, 5.0]
    point = np.array([2.0, 3.0])
    fn.grad(point)[:] = 0.0
    assert point.tolist() == [2.0, 3.0] and fn.grad(point).tolist() == [3.0, 2.0]


def test_points_with_more_inputs_than_results_and_vector_outputs(backend):
    a, b, c, d = sg.symbols("a b c d")
    fn = sg.compile(a * b + c * d, [a, b, c, d], wrt=[a], backend=backend)
    value, gradient = fn.value_and_grad(1.0, 2.0, 3.0, 4.0)
    assert value == 14.0 and gradient.tolist() == [2.0]
    assert fn(1.0, 2.0, 3.0, 4.0) == 14.0 and fn.grad(np.array([1.0, 2.0, 3.0, 4.0])).shape == (1,)
    vector = sg.compile([a + b, c * d], [a, b, c, d], backend=backend)
    out = vector(1.0, 2.0, 3.0, 4.0)
    assert out.shape == (2,) and out.tolist() == [3.0, 12.0]
    wide = sg.compile([a, b, a + b, a - b, a * b], [a, b], backend=backend)
    assert wide(2.0, 3.0).tolist() == [2.0, 3.0, 5.0, -1.0, 6.0]


def test_floats_mixed_with_arrays_broadcast_per_variable_and_a_short_point_raises(backend):
    fn = sg.compile(x + y, [x, y], backend=backend)
    assert fn(3.0, np.array([1.0, 2.0])).tolist() == [4.0, 5.0]  # y's array: two points
    with pytest.raises(ValueError, match="expected 2 value"):
        fn(np.array([1.0, 2.0, 3.0]))
    assert fn.value_and_grad.__name__ == "value_and_grad" and "fused" in (
        fn.value_and_grad.__doc__)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_arrays_given_per_variable_are_columns_of_a_batch_never_rows_read_as_points(backend):
    # Issue 21, item 1: with as many points as variables, f(xs, ys) used to read xs and ys as
    # two points [x0, x1] and [y0, y1].
    f = sg.compile("x**2*y", backend=backend)
    xs, ys = np.array([1.0, 3.0]), np.array([2.0, 4.0])
    expected = [2.0, 36.0]
    assert f(x=xs, y=ys).tolist() == expected
    assert f(xs, ys).tolist() == expected
    assert f(xs.tolist(), ys.tolist()).tolist() == expected
    assert f(xs, 2.0).tolist() == [2.0, 18.0]  # numbers broadcast against arrays
    values, grads = f.value_and_grad(xs, ys)
    assert values.tolist() == expected and grads.tolist() == [[4.0, 1.0], [24.0, 9.0]]
    assert f(np.column_stack([xs, ys])).tolist() == expected  # the batch spelling agrees
    with pytest.raises(ValueError, match=r"do not broadcast together \(x: \(3,\), y: \(2,\)\)"):
        f(np.array([1.0, 2.0, 3.0]), ys)


def test_threads_making_one_structure_at_once_get_one_node():
    # Issue 21, item 4: interning is check-then-insert; under a tiny switch interval threads
    # used to make two symbols named alike.
    import threading

    from symgraph.ir.node import symbol

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for trial in range(40):
            made: list = []
            threads = [threading.Thread(target=lambda n=f"race{trial}", into=made: into.append(
                symbol(n) * 2.0 + 1.0)) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len({id(node) for node in made}) == 1
    finally:
        sys.setswitchinterval(interval)


def test_threads_remaking_collected_structures_at_once_get_one_node_each_and_leave_no_entry():
    # Interning takes no lock (`intern._make`: setdefault, and a dead entry removed first):
    # nodes collected and made again while other threads make them still come out one each.
    import threading

    from symgraph.ir import intern

    a = sg.symbol("remade")
    before = sum(len(table) for table in intern._TABLES.values())
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(30):
            made: list = [[] for _ in range(6)]
            barrier = threading.Barrier(6)

            def work(into: list, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                for k in range(40):  # each round's nodes die with the last list holding them
                    into.append(sg.sin(a * (k + 0.5)) + sg.cos(a) * (k + 0.5))

            threads = [threading.Thread(target=work, args=(into,)) for into in made]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert all(len({id(ns[k]) for ns in made}) == 1 for k in range(40))
            del made, threads
    finally:
        sys.setswitchinterval(interval)
    assert sum(len(table) for table in intern._TABLES.values()) <= before + 1  # (cos(a))


def test_a_first_call_is_interpreted_without_making_or_compiling_the_straight_line_module(
        tmp_path):
    fn = sg.compile(sg.exp(x * y) + sg.sin(x) / y, [x, y], cache_dir=tmp_path)
    value, grad = fn.value_and_grad(1.0, 2.0)
    same = fn.value_and_grad(np.array([1.0, 2.0]))
    values, grads = fn.value_and_grad(np.array([[1.0, 2.0], [0.5, -1.0]]))
    assert fn._built._built is None  # no straight-line module: nothing rendered or compiled
    assert not [p for p in tmp_path.glob("sg_*.py") if "numba" in p.read_text()]
    assert value == pytest.approx(np.exp(2.0) + np.sin(1.0) / 2, rel=1e-15)
    assert grad.tolist() == pytest.approx([2 * np.exp(2.0) + np.cos(1.0) / 2,
                                           np.exp(2.0) - np.sin(1.0) / 4], rel=1e-15)
    assert same[0] == value and same[1].tolist() == grad.tolist()
    assert values[1] == pytest.approx(np.exp(-0.5) - np.sin(0.5), rel=1e-15)
    assert grads[0].tolist() == pytest.approx(grad.tolist(), rel=1e-15)


def test_an_interpreted_floats_call_counts_its_own_loss_beside_value_and_grads(tmp_path):
    # value_and_grad_floats runs interpreted through the checked value_and_grad, and loses more
    # than it against its compiled entry: the switch counts that too (runtime.interpret).
    from symgraph.runtime import interpret

    fn = sg.compile(sg.exp(x * y) + sg.sin(x) / y, [x, y], cache_dir=tmp_path)
    pending = fn._built.pending["value_grad"]
    fn.value_and_grad(1.0, 2.0)
    after_one = pending.lost_ns
    fn.value_and_grad(1.0, 2.0)
    by_value_and_grad = pending.lost_ns - after_one
    value, grad = fn.value_and_grad_floats(1.0, 2.0)
    by_floats = pending.lost_ns - after_one - by_value_and_grad
    assert fn._built._built is None  # (still interpreted)
    assert by_floats == pytest.approx(by_value_and_grad + interpret.FLOATS_ROW_NS
                                      + 2 * interpret.FLOATS_ROW_NS_PER_INPUT)
    assert (value, grad) == (fn.value_and_grad(1.0, 2.0)[0],
                             tuple(fn.value_and_grad(1.0, 2.0)[1].tolist()))


def test_interpreted_calls_switch_at_the_call_where_their_lost_time_reaches_the_switchs_cost(
        monkeypatch):
    from symgraph.runtime import interpret

    class Interpreter:  # the Python module's kernels, counted
        calls: list[str] = []

        @staticmethod
        def value_grad_row(x, out):
            Interpreter.calls.append("interpreted")
            out[0] = sum(x)

        @staticmethod
        def value_grad_batch(X, OUT):
            Interpreter.calls.append("interpreted batch")

    class Built:  # the straight-line Build
        rows = {"value_grad": lambda x, out: Interpreter.calls.append("compiled")}
        batches = threaded = {"value_grad": lambda X, OUT: Interpreter.calls.append(
            "compiled batch")}

    made = []
    monkeypatch.setattr(interpret, "switch_ms",
                        lambda ops, cached, lanes=0: 2.5 * interpret.row_loss_ns(ops, 2) / 1e6)
    pending = interpret.Pending("value_grad", 10, lambda: Interpreter,
                                lambda: made.append(1) or Built, lambda: False)
    out = np.empty(1)
    for _ in range(4):
        pending.row(np.ones(2), out)
    assert Interpreter.calls == ["interpreted"] * 2 + ["compiled"] * 2 and made == [1]
    # A batch that alone would lose more than the switch costs switches at once.
    fresh = interpret.Pending("value_grad", 10, lambda: Interpreter, lambda: Built,
                              lambda: False)
    Interpreter.calls.clear()
    fresh.batch(np.ones((1000, 2)), np.empty((1000, 1)))
    assert Interpreter.calls == ["compiled batch"]
