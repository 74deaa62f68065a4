"""How symgraph's printed derivatives compare with SymPy's ``diff`` on textbook formulas.

For every partial derivative of every formula in tests/textbook.py: the length of symgraph's
text (`to_text`) against ``str(sympy.diff(f, x))``, the operations of both (SymPy's
``count_ops``, symgraph's printed form read into SymPy by `to_sympy`), and the numbers of
symgraph's derivative, of its printed text read back by `parse`, and of SymPy's, at a random
point. Prints the share of partials whose text is no longer than SymPy's and the worst cases.

    python benchmarks/printed_derivatives.py [--worst N]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp  # noqa: E402

import symgraph as sg  # noqa: E402
from symgraph.ir.tidy import tidy  # noqa: E402
from tests.textbook import FORMULAS  # noqa: E402


@dataclass
class Partial:
    formula: str
    variable: str
    ours: str
    theirs: str
    our_ops: int
    their_ops: int
    agree: bool  # the three numbers agree at the random point (or the point is outside)

    @property
    def shorter_or_equal(self) -> bool:
        return len(self.ours) <= len(self.theirs)


def _point(f: sg.Node, names: list[str], rng: random.Random) -> dict[str, float]:
    """A random point where f is finite (values in (0.1, 0.9), as probabilities need)."""
    point = {}
    for _ in range(50):
        point = {n: rng.uniform(0.1, 0.9) for n in names}
        if math.isfinite(float(sg.evaluate(f, point))):
            return point
    return point


def _close(a: float, b: float) -> bool:
    if not (math.isfinite(a) and math.isfinite(b)):
        return not math.isfinite(a) and not math.isfinite(b)
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def measure(formulas=FORMULAS, seed: int = 16) -> list[Partial]:
    rng = random.Random(seed)
    results = []
    for name, text in formulas:
        f = sg.parse(text)
        variables = sg.free_symbols(f)
        names = [v.name for v in variables]
        chosen = {n: sp.Symbol(n, real=True) for n in names}
        theirs_f = _sympy_formula(text, chosen)
        point = _point(f, names, rng)
        for v in variables:
            d = sg.diff(f, v)
            ours = sg.to_text(d)
            theirs = sp.diff(theirs_f, chosen[v.name])
            shown = sg.to_sympy(tidy(d))
            value = float(sg.evaluate(d, point))
            reread = float(sg.evaluate(sg.parse(ours), point)) if any(
                n in ours for n in names) else float(sg.evaluate(sg.parse(ours), {}))
            sympy_value = complex(theirs.subs({chosen[n]: x for n, x in point.items()}).evalf())
            exact = sympy_value.real if abs(sympy_value.imag) < 1e-12 else math.nan
            results.append(Partial(
                name, v.name, ours, str(theirs), int(sp.count_ops(shown)),
                int(sp.count_ops(theirs)),
                _close(value, exact) and _close(reread, exact)))
    return results


_FUNCTIONS = {"log10": lambda x: sp.log(x, 10), "log2": lambda x: sp.log(x, 2),
              "abs": sp.Abs, "expm1": lambda x: sp.exp(x) - 1, "log1p": lambda x: sp.log(1 + x),
              "hypot": lambda a, b: sp.sqrt(a**2 + b**2), "sigmoid": lambda x: 1 / (1 + sp.exp(-x))}


def _sympy_formula(text: str, chosen: dict):
    """The formula as a SymPy user types it (the corpus is ours: parse_expr is safe here)."""
    from sympy.parsing.sympy_parser import parse_expr

    names = {**_FUNCTIONS, **chosen, "pi": sp.pi, "e": sp.E, "E": sp.E}
    return parse_expr(text, local_dict=names)


def report(results: list[Partial], worst: int = 5) -> str:
    n = len(results)
    short = sum(r.shorter_or_equal for r in results)
    more_ops = [r for r in results if r.our_ops > r.their_ops]
    wrong = [r for r in results if not r.agree]
    ours = sum(len(r.ours) for r in results)
    theirs = sum(len(r.theirs) for r in results)
    lines = [
        f"{len({r.formula for r in results})} formulas, {n} partial derivatives",
        f"symgraph's text no longer than SymPy's: {short}/{n} = {100 * short / n:.1f}%",
        f"characters in all: symgraph {ours}, SymPy {theirs} ({100 * ours / theirs:.0f}%)",
        f"more operations than SymPy (count_ops): {len(more_ops)}",
        f"numbers disagree at the random point: {len(wrong)}",
        "worst cases (symgraph's length / SymPy's):",
    ]
    ranked = sorted(results, key=lambda r: len(r.theirs) - len(r.ours))[:worst]
    for r in ranked:
        lines.append(f"  d/d{r.variable} {r.formula}: {len(r.ours)}/{len(r.theirs)}")
        lines.append(f"    symgraph: {r.ours}")
        lines.append(f"    SymPy:    {r.theirs}")
    for r in more_ops + wrong:
        lines.append(f"  ! d/d{r.variable} {r.formula}: ops {r.our_ops}/{r.their_ops}, "
                     f"agree={r.agree}: {r.ours}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worst", type=int, default=5)
    print(report(measure(), parser.parse_args().worst))


if __name__ == "__main__":
    main()
