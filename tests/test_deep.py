"""A 100,000-deep expression passes every stage under Python's default recursion limit."""

from __future__ import annotations

import sys

import symgraph as sg
from symgraph.backends.python import emit_python
from symgraph.lower.programs import build_programs

DEPTH = 100_000


def test_default_recursion_limit_is_in_force():
    assert sys.getrecursionlimit() <= 1000


def test_100k_deep_chain_parses_differentiates_schedules_and_emits_python():
    text = "sin(" * DEPTH + "x" + ")" * DEPTH
    expr = sg.parse(text)
    (x,) = sg.free_symbols(expr)
    (gradient,) = sg.grad(expr, [x])
    value_program, fused_program = build_programs([expr], [x], [x], scalar=True,
                                                  with_hessian=False)
    assert value_program.op_count == DEPTH
    assert fused_program.op_count <= 4 * DEPTH + 1
    source = emit_python([value_program, fused_program], "deep chain", [], ["x"], "test")
    assert source.count("math.sin(") == 2 * DEPTH
    assert sg.to_text(expr) == text
    # The derivative is an ordinary node; its flat text would repeat shared parts (~10**10
    # characters), so it prints in the shared form, as the CLI's --cse does.
    assert sg.to_text_cse([gradient], ["g"]).count("cos(") == DEPTH


def test_100k_deep_mixed_operator_chain_round_trips_through_text():
    pieces = ["x"]
    for i in range(DEPTH // 4):
        pieces.append(["+ 1)", "* y)", "- x)", "/ 2)"][i % 4])
    text = "(" * (DEPTH // 4) + " ".join(pieces)
    expr = sg.parse(text)
    assert sg.parse(sg.to_text(expr, tidy=False)) is expr
    assert sg.count_ops(expr) >= DEPTH // 4 - 1
    gradient = sg.grad(expr, sg.free_symbols(expr))
    assert len(gradient) == 2
