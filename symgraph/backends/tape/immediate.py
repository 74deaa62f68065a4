"""Immediate instructions for a batch's lanes: each instruction of an `IMMEDIATE` base whose
operand in the form's slot is a constant's register becomes that form
(`symgraph.backends.tape.opcodes.IMMEDIATE`), which the lanes compute with the constant as one
number, read from the tape's constants, instead of as a row of lanes: a constant then takes no
row of the lane block in cache and no load per lane. The same operation on the same numbers,
so the same results bit for bit; a constant in operand b of a base whose a and b commute
(`COMMUTING`) is moved to a first (IEEE addition and multiplication commute, zero signs
included; only which of two nan operands' payloads survives may change, which IEEE leaves
open). Rows (`run`) compute an immediate instruction as its base, on the constant's register.

Value+grad lane run_batch per point, 128 lanes, CPU time, one process, load 4.6, without ->
with: arrhenius@993 (FIT) 13.45 -> 10.09 us, gauss_loglik@840 (FIT) 1.87 -> 1.66; held out:
cubic_eos@74 5.61 -> 3.15 (2,693 of its 2,933 registers are constants).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .opcodes import COMMUTING, IMMEDIATE


def _forms(interpreter: Any) -> tuple:
    """(codes of the commuting bases, the arity-2 ones among them, rows (code, base code,
    slot)) of `interpreter`, kept on it (interpreters are few)."""
    forms = getattr(interpreter, "_tape_immediate_forms", None)
    if forms is None:
        codes = interpreter.codes
        commuting = [codes[name] for name in COMMUTING]
        binary = [code for code in commuting if interpreter.arities[code] == 2]
        rows = [(codes[name], codes[base], slot) for name, base, slot in IMMEDIATE]
        forms = interpreter._tape_immediate_forms = (commuting, binary, rows)
    return forms


def immediates(interpreter: Any, opcodes: np.ndarray, operands: np.ndarray, n_inputs: int,
               n_constants: int) -> tuple[np.ndarray, np.ndarray] | None:
    """New (opcodes, operands) of a tape of `interpreter` (constants in registers n_inputs ...
    n_inputs + n_constants - 1) with its instructions on a constant made immediate ones where
    a form fits (the first in `IMMEDIATE`'s order); None when none fits. (Arrays in, arrays
    out: `module.with_immediates` makes the tape.)"""
    commuting, binary, rows = _forms(interpreter)
    low, high = n_inputs, n_inputs + n_constants
    new_opcodes, new_operands = opcodes.copy(), operands.copy()
    constant = (operands >= low) & (operands < high)
    swap = np.isin(opcodes, commuting) & constant[:, 1] & ~constant[:, 0]
    if swap.any():
        new_operands[swap, 0], new_operands[swap, 1] = operands[swap, 1], operands[swap, 0]
        pair = swap & np.isin(opcodes, binary)
        new_operands[pair, 2] = new_operands[pair, 0]  # (an unused slot repeats the first)
        constant[swap, 0], constant[swap, 1] = True, False
    done = np.zeros(len(opcodes), np.bool_)
    for code, base, slot in rows:
        fits = (opcodes == base) & constant[:, slot] & ~done
        new_opcodes[fits] = code
        done |= fits
    return (new_opcodes, new_operands) if done.any() else None
