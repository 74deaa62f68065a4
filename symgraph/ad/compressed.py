"""Sparse derivatives as nodes: only the structural nonzeros, in pattern order.

Compressed differentiation (Curtis, Powell and Reid): columns that share no row get one color,
and one forward sweep seeded with all of a color's variables gives, in each row, the one entry
of that color. The Jacobian takes one `jvp` per color of its columns (or one `vjp` per color
of its rows, when there are fewer); the Hessian one `jvp` of the gradient per color
(forward over reverse). A chained Rosenbrock needs 3 colors, a 5-point stencil about 5, so
the work is a few sweeps, not one per variable as in the dense `hessian`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..frontends.coerce import as_expression, as_symbols
from ..ir.node import Node, const
from ..ir.traversal import bulk
from .differentiate import jvp, vjp
from .sparsity import hessian_sparsity, jacobian_sparsity


def color_columns(rows: np.ndarray, cols: np.ndarray, n_cols: int) -> np.ndarray:
    """Greedy distance-2 coloring: columns sharing a row get different colors (ints from 0).
    Columns in order, each the smallest color none of its row-neighbours has."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    by_col = np.argsort(cols, kind="stable")
    col_rows = np.split(rows[by_col], np.searchsorted(cols[by_col], np.arange(1, n_cols)))
    by_row = np.argsort(rows, kind="stable")
    n_rows = int(rows.max()) + 1 if rows.size else 0
    row_cols = np.split(cols[by_row], np.searchsorted(rows[by_row], np.arange(1, n_rows)))
    row_cols = [r.tolist() for r in row_cols]
    color = [-1] * n_cols
    for j in range(n_cols):
        taken = set()
        for r in col_rows[j].tolist():
            for k in row_cols[r]:
                taken.add(color[k])
        c = 0
        while c in taken:
            c += 1
        color[j] = c
    return np.asarray(color, dtype=np.int64)


def _groups(color: np.ndarray) -> list[list[int]]:
    groups: list[list[int]] = [[] for _ in range(int(color.max()) + 1 if color.size else 0)]
    for j, c in enumerate(color.tolist()):
        groups[c].append(j)
    return groups


def _is_zero(node: Node) -> bool:
    return node.is_const and node.value == 0.0


@bulk
def sparse_jacobian(outputs: Sequence, wrt: Sequence | None = None
                    ) -> tuple[np.ndarray, np.ndarray, list[Node]]:
    """(rows, cols, entries): the pattern of d outputs / d wrt and an expression per entry."""
    outputs = [as_expression(o) for o in outputs]
    wrt = as_symbols(wrt, outputs, role="the variables of a derivative")
    rows, cols = jacobian_sparsity(outputs, wrt)
    m, n = len(outputs), len(wrt)
    col_color = color_columns(rows, cols, n)
    row_color = color_columns(cols, rows, m)  # rows sharing a column differ
    entries: list[Node] = []
    if rows.size == 0:
        return rows, cols, entries
    if row_color.max() < col_color.max():  # reverse sweeps: one per color of rows
        swept = {}
        for c, members in enumerate(_groups(row_color)):
            kept = [outputs[k] for k in members]
            swept[c] = vjp(kept, [1.0] * len(kept), wrt)
        entries = [swept[row_color[i]][j] for i, j in zip(rows.tolist(), cols.tolist())]
    else:  # forward sweeps: one per color of columns
        swept = {c: jvp(outputs, [wrt[j] for j in members], [1.0] * len(members))
                 for c, members in enumerate(_groups(col_color))}
        entries = [swept[col_color[j]][i] for i, j in zip(rows.tolist(), cols.tolist())]
    return rows, cols, entries


@bulk
def sparse_hessian(f, wrt: Sequence | None = None, gradient: Sequence[Node] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, list[Node]]:
    """(rows, cols, entries) of the lower triangle of the Hessian of scalar `f`: the gradient
    by reverse mode (or `gradient`, if given), then one forward sweep of it per color of the
    full symmetric pattern's columns."""
    f = as_expression(f)
    wrt = as_symbols(wrt, [f], role="the variables of a derivative")
    rows, cols = hessian_sparsity(f, wrt)
    if rows.size == 0:
        return rows, cols, []
    if gradient is None:
        gradient = vjp([f], [1.0], wrt)
    off = rows != cols
    full_rows = np.concatenate([rows, cols[off]])
    full_cols = np.concatenate([cols, rows[off]])
    color = color_columns(full_rows, full_cols, len(wrt))
    swept = {}
    for c, members in enumerate(_groups(color)):
        # Only rows with an entry of this color are needed; others would be wasted work.
        wanted = sorted(set(full_rows[color[full_cols] == c].tolist()))
        out = jvp([gradient[i] for i in wanted], [wrt[j] for j in members], [1.0] * len(members))
        swept[c] = dict(zip(wanted, out))
    zero = const(0.0)
    entries = [swept[color[j]].get(i, zero) for i, j in zip(rows.tolist(), cols.tolist())]
    return rows, cols, entries


def nonzero_pattern(dense: Sequence[Sequence[Node]], lower: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The entries of a dense symbolic matrix that are not the constant 0 (for tests and
    checks): (rows, cols), row by row; `lower` keeps rows >= cols."""
    rows, cols = [], []
    for i, row in enumerate(dense):
        for j, d in enumerate(row):
            if (not lower or i >= j) and not _is_zero(d):
                rows.append(i)
                cols.append(j)
    return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
