"""How the `symgraph` command prints results: formulas, numbers, readable Python, and JSON.

Text output
    One derivative prints as just its formula (``2*x + 2``). Several print one per line as
    ``df/dx = ...``; the n-th derivative is ``d^2f/dx^2``, a mixed second derivative
    ``d^2f/dx dy``. ``f`` is the output's name: ``"y = W*x + b"`` names it ``y``.
    Numbers at a point print in Python's shortest round-trip form, with integral values
    without a fraction (``16``, ``0.5``, ``1e+300``, ``nan``, ``inf``).

JSON (``--json``, or ``diff --format json``): one object, keys sorted, 2-space indent, lists of
numbers or names on one line. Numbers
are JSON numbers in the same form as the text; ``nan``/``inf``/``-inf`` are the strings
``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no such numbers). Schema version 1::

    every command   {"schema": 1, "command": "<name>",
                     "expressions": [{"name": "f", "text": "<expression as symgraph prints it>"}],
                     "variables": ["x", ...]}        # derivative order of every vector/matrix
    diff            + "order": n,
                      "derivatives": [{"name": "df/dx", "variable": "x", "order": n,
                                       "text": "2*x + 2" | null, "latex": "..." | null}],
                      "cse": "t0 = ...\\ndf/dx = ..."  # the shared form, always present
                    ("text"/"latex" are null when the tree form is too large to print)
    grad            + "backend", "point": {"x": 3, ...}, "value": v, "gradient": [...]
    hessian         + the same as grad, and "hessian": [[...], ...]   (full symmetric matrix)
    jacobian        + "backend", "point", "value": [f0, f1, ...],
                      "jacobian": [[df0/dx, ...], [df1/dx, ...]]      (rows: expressions)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ..backends.common import INDENT, operand_text, step_lines
from ..ir.node import Node, apply, symbol
from ..ir.traversal import topological_order
from ..lower.naming import comment_text, input_identifiers, unique
from ..lower.schedule import schedule
from ..pictures.draw import derivative_label

SCHEMA_VERSION = 1
TEXT_LIMIT = 20_000  # characters of one printed formula; past it, --cse is the readable form


class OutputTooLarge(ValueError):
    """A formula whose tree form is too long to print."""


def number(value: float) -> int | float | str:
    """A float as the CLI shows it: integral values as ints, non-finite values as strings."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value.is_integer() and abs(value) < 2**53 and not (value == 0 and math.copysign(1, value)
                                                          < 0):
        return int(value)
    return value


def number_text(value: float) -> str:
    return str(number(value))


def dump_json(data: dict[str, Any]) -> str:
    """Sorted keys, 2-space indent, and each list of numbers or names on one line."""
    return _pretty(data, "") + "\n"


def _pretty(value: Any, pad: str) -> str:
    # Recursion here follows the JSON's fixed shape (depth <= 4), never the graph.
    inner = pad + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_pretty(value[k], inner)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}" if items else "{}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + _pretty(v, inner) for v in value) + f"\n{pad}]"
    return json.dumps(value, allow_nan=False, ensure_ascii=False)


def tidy(node: Node) -> Node:
    """The node rebuilt through `apply`, for tree-form display only.

    The differentiator keeps shared adjoints as nested sums/products (`graph.combine`), which
    is right for generated code but prints as ``y*(2*x)``; rebuilding flattens and folds them
    to ``2*x*y``. Shared forms (--cse, python) keep the original DAG.
    """
    rebuilt: dict[int, Node] = {}
    for n in topological_order([node]):
        rebuilt[id(n)] = apply(n.op, *[rebuilt[id(a)] for a in n.args]) if n.args else n
    return rebuilt[id(node)]


def formula(node: Node) -> str | None:
    """The text form of `node`, or None when it is longer than TEXT_LIMIT."""
    from ..ir.printer import to_text

    try:
        return to_text(node, max_length=TEXT_LIMIT)
    except ValueError:
        return None


def latex_formula(node: Node) -> str | None:
    from ..ir.printer import to_latex

    if formula(node) is None:  # LaTeX is no shorter than the text form
        return None
    return to_latex(node)


def expressions_json(names: Sequence[str], exprs: Sequence[Node]) -> list[dict[str, Any]]:
    return [{"name": n, "text": formula(e)} for n, e in zip(names, exprs)]


# -- diff ----------------------------------------------------------------------------------------


def _labelled(labels: Sequence[str], texts: Sequence[str]) -> str:
    if len(texts) == 1:
        return texts[0] + "\n"
    return "".join(f"{label} = {text}\n" for label, text in zip(labels, texts))


def _require_formula(node: Node, label: str) -> str:
    text = formula(node)
    if text is None:
        raise OutputTooLarge(f"{label} is longer than {TEXT_LIMIT:,} characters as one formula; "
                             "use --cse for the shared form with named temporaries")
    return text


def diff_text(labels: Sequence[str], derivatives: Sequence[Node]) -> str:
    return _labelled(labels, [_require_formula(d, lab) for lab, d in zip(labels, derivatives)])


def diff_cse(labels: Sequence[str], derivatives: Sequence[Node]) -> str:
    from ..ir.printer import to_text_cse

    text = to_text_cse(list(derivatives), list(labels))
    return text if text.endswith("\n") else text + "\n"


def diff_latex(name: str, variables: Sequence[str], order: int,
               derivatives: Sequence[Node]) -> str:
    from ..ir.printer import to_latex

    texts, labels = [], []
    for variable, d in zip(variables, derivatives):
        _require_formula(d, derivative_label(name, variable, order))
        texts.append(to_latex(d))
        var = to_latex(symbol(variable))
        power = "" if order == 1 else f"^{{{order}}}"
        labels.append(rf"\frac{{\partial{power} {to_latex(symbol(name))}}}"
                      rf"{{\partial {var}{power}}}")
    return _labelled(labels, texts)


def diff_sympy(labels: Sequence[str], derivatives: Sequence[Node]) -> str:
    import sympy

    from ..frontends.sympy_bridge import to_sympy

    texts = []
    for label, d in zip(labels, derivatives):
        _require_formula(d, label)  # the same size guard as the text form
        texts.append(sympy.sstr(to_sympy(d)))
    return _labelled(labels, texts)


def diff_python(name: str, expression_text: str | None, inputs: Sequence[Node],
                variables: Sequence[str], order: int, derivatives: Sequence[Node]) -> str:
    """A small standalone function computing the derivatives, one statement per shared node."""
    idents = input_identifiers([s.value for s in inputs])
    ident_of = dict(zip([s.value for s in inputs], idents))
    suffix = "" if order == 1 else str(order)
    # `name` is an ASCII identifier (the CLI checks), so labels are identifiers too.
    labels = unique([f"d{suffix}{name}_d{ident_of[v]}{suffix}" for v in variables], taken=idents)
    program = schedule("derivative", list(zip(labels, derivatives)), inputs, idents)
    body = step_lines(program, "py", INDENT)
    results = [operand_text(operand) for _, operand in program.outputs]
    title = ", ".join(derivative_label(name, v, order) for v in variables)
    about = f"{name} = {expression_text}" if expression_text else f"the expression {name}"
    lines = ["import math"]
    if any("np." in line for line in body):
        lines.append("import numpy as np")
    lines += ["", "", f"def {'derivative' if len(labels) == 1 else 'derivatives'}"
              f"({', '.join(idents)}):",
              f"{INDENT}# {comment_text(title, 300)} of {comment_text(about, 300)}",
              f"{INDENT}# (generated by symgraph; math raises where NumPy would give inf/nan)"]
    lines += body
    returned = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    lines.append(f"{INDENT}return {returned}")
    return "\n".join(lines) + "\n"


def diff_json(name: str, expression: Node, variables: Sequence[str], order: int,
              labels: Sequence[str], derivatives: Sequence[Node], tidied: Sequence[Node]) -> str:
    entries = [{"name": label, "variable": v, "order": order, "text": formula(d),
                "latex": latex_formula(d)}
               for label, v, d in zip(labels, variables, tidied)]
    return dump_json({"schema": SCHEMA_VERSION, "command": "diff",
                      "expressions": expressions_json([name], [expression]),
                      "variables": list(variables), "order": order, "derivatives": entries,
                      "cse": diff_cse(labels, derivatives)})


# -- values at a point ---------------------------------------------------------------------------


def point_text(results: dict[str, Any]) -> str:
    """Text for grad / hessian / jacobian results (see `evaluation_json` for the fields)."""
    names, variables = results["names"], results["variables"]
    lines: list[str] = []
    if results["command"] == "jacobian":
        lines += [f"{n} = {number_text(v)}" for n, v in zip(names, results["value"])]
        for n, row in zip(names, results["jacobian"]):
            lines += [f"{derivative_label(n, x)} = {number_text(d)}"
                      for x, d in zip(variables, row)]
        return "\n".join(lines) + "\n"
    name = names[0]
    lines.append(f"{name} = {number_text(results['value'])}")
    lines += [f"{derivative_label(name, x)} = {number_text(d)}"
              for x, d in zip(variables, results["gradient"])]
    if results["command"] == "hessian":  # symmetric: the upper triangle, row by row
        for i, a in enumerate(variables):
            for j in range(i, len(variables)):
                label = (derivative_label(name, a, 2) if i == j
                         else f"d^2{name}/d{a} d{variables[j]}")
                lines.append(f"{label} = {number_text(results['hessian'][i][j])}")
    return "\n".join(lines) + "\n"


def evaluation_json(results: dict[str, Any], exprs: Sequence[Node]) -> str:
    data = {"schema": SCHEMA_VERSION, "command": results["command"],
            "expressions": expressions_json(results["names"], exprs),
            "variables": list(results["variables"]), "backend": results["backend"],
            "point": {k: number(v) for k, v in results["point"].items()}}
    for key in ("value", "gradient", "hessian", "jacobian"):
        if key in results:
            data[key] = _numbers(results[key])
    return dump_json(data)


def _numbers(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_numbers(v) for v in value]
    return number(value)


__all__ = ["OutputTooLarge", "diff_cse", "diff_json", "diff_latex", "diff_python", "diff_sympy",
           "diff_text", "dump_json", "evaluation_json", "number", "number_text",
           "point_text"]
