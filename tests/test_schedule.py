"""lower.schedule: DAG -> one straight-line Program of typed operands, named t0, t1, ... in order
of first use, outputs named after their labels, wide sums split, negations inlined into sums,
the same program in every process; and how the backends spell the operands."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

import symgraph as sg
from symgraph.backends.common import operand_text, step_lines
from symgraph.lower.schedule import (
    CONST,
    MAX_WIDTH,
    NAME,
    Operand,
    power_exponent,
    schedule,
    schedule_all,
)

x, y, z = sg.symbols("x y z")


def _name(value: str, negated: bool = False) -> Operand:
    return Operand(NAME, value, negated)


def test_temporaries_are_numbered_in_order_and_outputs_take_their_labels():
    program = schedule("value", [("f", sg.exp(x * y) + x), ("df_dx", sg.sin(x) * 2.0)],
                       [x, y], ["x", "y"])
    targets = [s.target for s in program.steps]
    assert targets == ["t0", "t1", "f", "t2", "df_dx"]
    assert program.outputs == (("f", _name("f")), ("df_dx", _name("df_dx")))
    assert program.steps[1].operands == (_name("t0"),)  # exp(t0)


@pytest.mark.parametrize("f, more", [
    (sg.exp(x * y) + sg.sin(x) - sg.cos(z) * y, [sg.cos(x) * y, -sg.sin(z)]),  # shares f's nodes
    (y - x + z, [(-x) * z]),  # f's -x is inlined alone; the other output multiplies by it
    (x * y + z, [x * y, sg.exp(z)]),  # a node of f is another output: named after it
    (sg.tanh(x - y) * x, [sg.tanh(x - y), x - y, 1.0 - sg.tanh(x - y) ** 2]),
    (sg.sin(x) * y, [y, sg.const(2.0)]),  # nothing beyond f's nodes: all of its steps
])
def test_scheduling_jobs_together_gives_the_programs_of_scheduling_each_alone(f, more):
    # the value program is value_grad's first steps when that is what it would be anyway
    first = [("f", f)]
    whole = first + [(f"g{i}", g) for i, g in enumerate(more)]
    for comments in (True, False):
        alone = [schedule(name, outputs, [x, y, z], ["x", "y", "z"], comments)
                 for name, outputs in (("value", first), ("value_grad", whole))]
        together = schedule_all([("value", first), ("value_grad", whole)], [x, y, z],
                                ["x", "y", "z"], comments)
        assert together == alone
        assert schedule_all([("value_grad", whole), ("value", first)], [x, y, z],
                            ["x", "y", "z"], comments) == alone[::-1]


def test_an_output_that_is_an_input_or_a_constant_is_that_operand():
    program = schedule("value", [("f0", x), ("f1", sg.const(2.5))], [x], ["x"])
    assert program.steps == ()
    assert program.outputs == (("f0", _name("x")), ("f1", Operand(CONST, 2.5)))


def test_wide_sums_split_into_chained_steps_of_at_most_max_width_operands():
    xs = [sg.symbol(f"x{i}") for i in range(40)]
    program = schedule("value", [("f", sg.add(*xs))], xs, [s.value for s in xs])
    widths = [len(s.operands) for s in program.steps]
    assert widths == [MAX_WIDTH, MAX_WIDTH, 40 - 2 * MAX_WIDTH + 2]
    # Left to right, each link's first operand the previous partial: the rounding of one sum.
    assert program.steps[1].operands[0] == _name(program.steps[0].target)
    assert program.steps[2].operands[0] == _name(program.steps[1].target)
    names = [o.value for s in program.steps for o in s.operands if not o.value.startswith("t")]
    assert sorted(names) == sorted(s.value for s in xs)  # each term once


def test_negations_used_only_by_sums_are_inlined_as_negated_operands():
    program = schedule("value", [("f", x - y * z)], [x, y, z], ["x", "y", "z"])
    assert [s.op for s in program.steps] == ["mul", "add"]
    assert program.steps[1].operands == (_name("x"), _name("t0", negated=True))
    assert step_lines(program, "py", "")[-1].startswith("f = x - t0  #")
    # A negation with another use keeps its step.
    program = schedule("value", [("f", sg.exp(-(x * y)) + x)], [x, y], ["x", "y"])
    assert "neg" in [s.op for s in program.steps]
    assert not any(o.negated for s in program.steps for o in s.operands)


def test_constants_are_floats_and_spelled_by_the_backends():
    program = schedule("value", [("f", 2.0 * x - sg.sin(x) * math.inf + math.nan * y)],
                       [x, y], ["x", "y"])
    constants = [o.value for s in program.steps for o in s.operands if o.kind == CONST]
    assert 2.0 in constants and -math.inf in constants and any(map(math.isnan, constants))
    assert all(type(c) is float for c in constants)
    assert operand_text(Operand(CONST, -math.inf)) == "-math.inf"
    assert operand_text(Operand(CONST, math.nan)) == "math.nan"
    assert operand_text(Operand(CONST, 0.1)) == "0.1"
    assert operand_text(_name("t3", negated=True)) == "-t3"
    assert Operand(CONST, 2.0).negative() == Operand(CONST, -2.0)
    assert _name("t3", negated=True).negative() == _name("t3")


@pytest.mark.parametrize(("exponent", "expected"), [(3.0, 3), (-2.0, -2), (0.0, 0), (4.0, 4),
                                                    (5.0, None), (0.5, None)])
def test_small_integer_powers_are_read_from_constants(exponent, expected):
    program = schedule("value", [("f", sg.apply("pow", x, sg.const(exponent)))], [x], ["x"])
    pows = [s for s in program.steps if s.op == "pow"]
    if pows:
        assert power_exponent(pows[0]) == expected
    program = schedule("value", [("f", x ** y)], [x, y], ["x", "y"])
    assert power_exponent(program.steps[0]) is None  # a name: not a literal exponent


def test_an_expression_over_a_symbol_not_among_the_inputs_is_refused():
    with pytest.raises(ValueError, match="depends on 'z', which is not one of the arguments"):
        schedule("value", [("f", x * z)], [x], ["x"])


_PRINT_PROGRAM = """
import symgraph as sg
from symgraph.lower.programs import build_programs
x, y, z = sg.symbols("x y z")
f = sg.exp(x * y) - sg.sin(z) * x + (x - y) ** 3 / (z + 2.0) + sg.hypot(x, y)
for p in build_programs([f], [x, y, z], [x, y, z], True, True):
    print(p)
"""


def test_programs_are_identical_across_hash_seeds():
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run([sys.executable, "-c", _PRINT_PROGRAM], env=env,
                                capture_output=True, text=True, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1 and "Operand(" in outputs.pop()
