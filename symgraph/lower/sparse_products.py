"""Products of sparse derivatives and of derivatives with vectors: more `Product` records.

Each is one fused kernel whose row starts with the values, like every product:

- ``sparse_jac``: the Jacobian's structural nonzeros, in pattern order (ad.sparsity);
- ``sparse_hess``: the lower triangle of a scalar's Hessian, in pattern order (a Lagrangian
  ``sigma*f + sum(lam_i*g_i)`` is a scalar whose sigma and lam are plain inputs);
- ``hessp``: value, gradient and H v (forward over reverse: H is never formed);
- ``jvp``: values and J v; ``vjp``: values and J^T w.

Products with a vector take it as more inputs after the arguments (`vector_inputs`): the
kernel's point is ``[x, v]``, so a batch is rows of ``[x, v]`` and the kernels stay the plain
``row(x, out)`` / ``batch(X, OUT)`` of every program.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ad.compressed import sparse_hessian, sparse_jacobian
from ..ad.differentiate import jvp, vjp
from ..ir.node import Node, symbol
from .products import Derivatives, Product, Slots

_PREFIX = {"hessp": "_hessp_v", "jvp": "_jvp_v", "vjp": "_vjp_w", "lagrangian": "_lagrange"}


def vector_inputs(kind: str, count: int, taken: Sequence[Node]) -> list[Node]:
    """`count` fresh symbols for a product's vector (`kind`: hessp, jvp, vjp, lagrangian),
    refused if the expression already uses one of their names."""
    prefix = _PREFIX[kind]
    made = [symbol(f"{prefix}[{i}]") for i in range(count)]
    clash = set(made).intersection(taken)
    if clash:
        raise ValueError(f"symbols named like {sorted(s.value for s in clash)[:3]} are "
                         f"reserved for the {kind} kernel's vector; rename them")
    return made


def _tail(d: Derivatives, count: int) -> list[Node]:
    return d.inputs[len(d.inputs) - count:]


def sparse_jacobian_product(nnz: int) -> Product:
    def slots(d: Derivatives) -> Slots:
        rows, cols, entries = sparse_jacobian(d.outputs, d.wrt)
        labels = [f"d{d.labels[i]}_d{d.wrt_idents[j]}" for i, j in zip(rows.tolist(),
                                                                         cols.tolist())]
        return list(zip(labels, entries))

    return Product("sparse_jac", slots, lambda m, k: (m, (nnz,)),
                   about="values and the Jacobian's structural nonzeros")


def sparse_hessian_product(nnz: int) -> Product:
    def slots(d: Derivatives) -> Slots:
        rows, cols, entries = sparse_hessian(d.outputs[0], d.wrt, d.jacobian[0])
        labels = [f"d2f_d{d.wrt_idents[i]}_d{d.wrt_idents[j]}"
                  for i, j in zip(rows.tolist(), cols.tolist())]
        return list(zip(labels, entries))

    return Product("sparse_hess", slots, lambda m, k: (1, (nnz,)), scalar_only=True,
                   about="value and the Hessian's lower-triangle nonzeros")


def _hessp_slots(d: Derivatives) -> Slots:
    k = len(d.wrt)
    gradient = d.jacobian[0]
    products = jvp(gradient, d.wrt, _tail(d, k))
    return d.gradient_slots + [(f"d2f_v_d{i}", p) for i, p in zip(d.wrt_idents, products)]


def _jvp_slots(d: Derivatives) -> Slots:
    products = jvp(d.outputs, d.wrt, _tail(d, len(d.wrt)))
    return [(f"d{label}_v", p) for label, p in zip(d.labels, products)]


def _vjp_slots(d: Derivatives) -> Slots:
    products = vjp(d.outputs, _tail(d, len(d.outputs)), d.wrt)
    return [(f"df_w_d{i}", p) for i, p in zip(d.wrt_idents, products)]


HESSP = Product("hessp", _hessp_slots, lambda m, k: (1 + k, (k,)), scalar_only=True,
                about="value, gradient and Hessian times a vector")
JVP = Product("jvp", _jvp_slots, lambda m, k: (m, (m,)),
              about="values and Jacobian times a vector")
VJP = Product("vjp", _vjp_slots, lambda m, k: (m, (k,)),
              about="values and a vector times the Jacobian")
