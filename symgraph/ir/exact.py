"""Exact constants: rationals times rational powers of primes, pi and e (``1/3``, ``sqrt(2*pi)``).

Literal arithmetic such as ``1/3``, ``2**-1`` or ``sqrt(2*pi)`` folds here exactly, so the DAG
and its printed text keep the number a person wrote; the node's value is still a float64 (the
correctly rounded value of the exact number), so every backend reads a plain float.

A *form* is ``(coefficient, atoms)``: a `Fraction` and a sorted tuple of ``(atom, exponent)``,
where an atom is ``"pi"``, ``"E"`` or a prime, and exponents are nonzero Fractions (a prime's is
in (0, 1): whole powers go into the coefficient). Operations return None where the result is
not such a form (``1 + pi``, ``sin(1)``) or would be unwieldy; the caller then folds in float64.
A float takes part only if it is a "small" dyadic rational (``0.5``, ``3``, ``-1.25``): ``0.1``
as written stays a float, so float literals keep their meaning and their text.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

__all__ = ["Exact", "form_of", "fold", "exact_text", "make", "PI", "EULER", "NAMED"]

_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640629")
_E = Decimal("2.71828182845904523536028747135266249775724709369995957496696762772407663035")
_MAX_INT = 10**15  # coefficients past this fold in float64 instead
_MAX_DEN = 2**10  # a float with a larger denominator is a measured number, not an exact one
_MAX_ROOT = 12  # largest root index kept exact (x**(1/12))
_MAX_FACTOR = 10**6  # only numbers this small are factored into primes


class Exact(float):
    """A float64 constant that remembers the exact number it is the correctly rounded value of.

    Arithmetic on it gives plain floats (it *is* its float everywhere but in folding/printing).
    """

    __slots__ = ("form",)

    def key(self) -> str:
        coefficient, atoms = self.form
        return "exact:" + str(coefficient) + "".join(f"*{a}^{e}" for a, e in atoms)


def _value(form) -> float | None:
    coefficient, atoms = form
    try:
        if not atoms:
            return float(coefficient)
        with localcontext() as ctx:
            ctx.prec = 60
            total = Decimal(coefficient.numerator) / Decimal(coefficient.denominator)
            for atom, exponent in atoms:
                base = _PI if atom == "pi" else _E if atom == "E" else Decimal(atom)
                if exponent.denominator == 1:
                    total *= base ** int(exponent)
                else:
                    total *= base ** (Decimal(exponent.numerator) / Decimal(exponent.denominator))
            return float(total)
    except (OverflowError, ArithmeticError):
        return None


def make(form) -> float | None:
    """The constant of `form`: a plain float when it is one exactly, else an `Exact`."""
    if form is None:
        return None
    coefficient, atoms = form
    value = _value(form)
    if value is None or not math.isfinite(value):
        return None
    if not atoms and Fraction(value) == coefficient:
        return value
    number = Exact(value)
    number.form = form
    return number


def form_of(value: float):
    """The exact form of a constant's value, or None for a float that is a measured number."""
    if value.__class__ is Exact:
        return value.form
    if not math.isfinite(value) or value == 0.0 and math.copysign(1.0, value) < 0:
        return None  # -0.0 keeps its sign only in float64
    fraction = Fraction(value)
    if fraction.denominator > _MAX_DEN or abs(fraction.numerator) > _MAX_INT:
        return None
    return (fraction, ())


def _small(f: Fraction) -> bool:
    return abs(f.numerator) <= _MAX_INT and f.denominator <= _MAX_INT


def _primes(n: int) -> dict[int, int] | None:
    if n > _MAX_FACTOR:
        return None
    found: dict[int, int] = {}
    p = 2
    while p * p <= n:
        while n % p == 0:
            found[p] = found.get(p, 0) + 1
            n //= p
        p += 1
    if n > 1:
        found[n] = found.get(n, 0) + 1
    return found


def _normal(coefficient: Fraction, atoms: dict):
    """Whole powers of primes into the coefficient; drop zero exponents; sort the atoms."""
    kept = []
    for atom, exponent in atoms.items():
        if exponent == 0:
            continue
        if exponent.denominator > _MAX_ROOT:
            return None
        if atom not in ("pi", "E"):
            whole = math.floor(exponent)
            if abs(whole) > 64:
                return None
            coefficient *= Fraction(atom) ** whole
            exponent -= whole
            if exponent == 0:
                continue
        kept.append((atom, exponent))
    if not _small(coefficient):
        return None
    kept.sort(key=lambda item: (isinstance(item[0], str), str(item[0])))
    return (coefficient, tuple(kept))


def _mul(a, b):
    atoms = dict(a[1])
    for atom, exponent in b[1]:
        atoms[atom] = atoms.get(atom, 0) + exponent
    return _normal(a[0] * b[0], atoms)


def _pow(a, q: Fraction):
    coefficient, atoms = a
    if coefficient == 0:
        return a if q > 0 else None
    if q.denominator == 1:
        if abs(q) > 64:
            return None
        new = {atom: e * q for atom, e in atoms}
        return _normal(coefficient ** int(q), new)
    if coefficient < 0 or q.denominator > _MAX_ROOT:
        return None  # nan, or an unwieldy root: float64 decides
    new = {atom: e * q for atom, e in atoms}
    for part, sign in ((coefficient.numerator, 1), (coefficient.denominator, -1)):
        primes = _primes(part)
        if primes is None:
            return None
        for p, k in primes.items():
            new[p] = new.get(p, 0) + sign * k * q
    return _normal(Fraction(1), new)


power_form = _pow  # (form, exponent) -> form or None: the display form splits roots with it


def _add(a, b):
    if a[0] == 0:
        return b
    if b[0] == 0:
        return a
    if a[1] != b[1]:
        return None
    total = a[0] + b[0]
    return (total, a[1] if total else ()) if _small(total) else None


_FOLDS = frozenset(("add", "mul", "neg", "div", "pow", "sqrt", "cbrt", "exp", "log"))
_PLAIN = frozenset(("add", "mul", "neg"))


def fold(op: str, numbers: list[float]) -> float | None:
    """`op` over constants, exactly: the constant, or None where float64 must decide."""
    if op not in _FOLDS or op in _PLAIN and not any(v.__class__ is Exact for v in numbers):
        return None  # plain dyadic floats: float64 arithmetic is already exact or rounds once
    forms = [form_of(v) for v in numbers]
    if any(f is None for f in forms):
        return None
    result = None
    if op == "add" or op == "mul":
        result = forms[0]
        for f in forms[1:]:
            result = (_add if op == "add" else _mul)(result, f)
            if result is None:
                return None
    elif op == "neg":
        result = (-forms[0][0], forms[0][1])
    elif op == "div":
        inverse = _pow(forms[1], Fraction(-1))
        result = inverse and _mul(forms[0], inverse)
    elif op == "pow":
        if forms[1][1]:
            return None
        result = _pow(forms[0], forms[1][0])
    elif op == "sqrt":
        result = _pow(forms[0], Fraction(1, 2))
    elif op == "cbrt":
        sign = -1 if forms[0][0] < 0 else 1
        root = _pow((abs(forms[0][0]), forms[0][1]), Fraction(1, 3))
        result = root and (sign * root[0], root[1])
    elif op == "exp" and not forms[0][1]:
        result = _normal(Fraction(1), {"E": forms[0][0]})
    elif op == "log" and forms[0][0] == 1 and len(forms[0][1]) == 1 and forms[0][1][0][0] == "E":
        result = (forms[0][1][0][1], ())
    return make(result) if result is not None else None


PI = make((Fraction(1), (("pi", Fraction(1)),)))
EULER = make((Fraction(1), (("E", Fraction(1)),)))
NAMED = {PI: PI, -PI: make((Fraction(-1), (("pi", Fraction(1)),))),
         EULER: EULER, -EULER: make((Fraction(-1), (("E", Fraction(1)),)))}


def _atom_text(atom, latex: bool) -> str:
    if atom == "pi":
        return r"\pi" if latex else "pi"
    if atom == "E":
        return "e"
    return str(atom)


def _power_text(atom, exponent: Fraction, latex: bool) -> str:
    base = _atom_text(atom, latex)
    if exponent == 1:
        return base
    if latex:
        shown = str(exponent) if exponent.denominator == 1 else \
            rf"\frac{{{exponent.numerator}}}{{{exponent.denominator}}}"
        return f"{base}^{{{shown}}}"
    shown = str(exponent) if exponent.denominator == 1 else f"({exponent})"
    return f"{base}**{shown}"


def _product_text(number: int, atoms: list, latex: bool) -> str:
    roots = [a for a, e in atoms if e == Fraction(1, 2)]
    parts = [str(number)] if number != 1 or not atoms else []
    parts += [_power_text(a, e, latex) for a, e in atoms if e != Fraction(1, 2)]
    if roots:
        inner = (r" " if latex else "*").join(_atom_text(a, latex) for a in roots)
        parts.append(rf"\sqrt{{{inner}}}" if latex else f"sqrt({inner})")
    return (r" " if latex else "*").join(parts)


def exact_text(form, latex: bool = False) -> str:
    """``1/3``, ``-pi/2``, ``sqrt(2*pi)``, ``2**(1/3)``: text the parser folds back to `form`."""
    coefficient, atoms = form
    shifted = []
    for atom, exponent in atoms:  # sqrt(2)/4 reads better as 1/(2*sqrt(2))
        if not isinstance(atom, str) and exponent > 0 and coefficient.denominator % atom == 0:
            coefficient *= atom
            exponent -= 1
        shifted.append((atom, exponent))
    atoms = shifted
    upper = [(a, e) for a, e in atoms if e > 0]
    lower = [(a, -e) for a, e in atoms if e < 0]
    sign = "-" if coefficient < 0 else ""
    top = _product_text(abs(coefficient.numerator), upper, latex)
    if coefficient.denominator == 1 and not lower:
        return sign + top
    bottom = _product_text(coefficient.denominator, lower, latex)
    if latex:
        return rf"{sign}\frac{{{top}}}{{{bottom}}}"
    depth = 0
    for ch in bottom:  # a product below the bar needs parentheses: 1/(2*pi), 1/sqrt(2*pi)
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == "*":
            bottom = f"({bottom})"
            break
    return f"{sign}{top}/{bottom}"
