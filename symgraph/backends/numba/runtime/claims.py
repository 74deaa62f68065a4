"""How threads share a batch: the two atomic operations of a ``NAME_chunks`` kernel.

``NAME_chunks(_X, _OUT, _claims)`` (symgraph.backends.numba.batch) claims chunks of the batch
one at a time (``_claims[0]``: the next chunk), counts each chunk it finishes (``_claims[1]``),
and returns once every chunk is finished, or after a short wait for chunks other threads still
run. Threads that call it with one ``_claims`` array share the batch (symgraph.runtime.batching).
Part of the runtime adapter: the intrinsics use Numba's internals and llvmlite's builder.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _claim_pointer(context, builder, signature, args):
    ty, (claims, k) = signature.args[0], args
    ary = context.make_array(ty)(context, builder, claims)
    index = context.cast(builder, k, signature.args[1], types.intp)
    return cgutils.get_item_pointer(context, builder, ty, ary, [index])


@intrinsic
def fetch_add(typingctx, claims, k):
    """claims[k] += 1 in one atomic step (the other threads' writes before theirs are seen);
    returns the value before."""
    def lower(context, builder, signature, args):
        one = context.get_constant(types.int64, 1)
        return builder.atomic_rmw("add", _claim_pointer(context, builder, signature, args),
                                  one, "acq_rel")

    return types.int64(claims, k), lower


@intrinsic
def load_acquire(typingctx, claims, k):
    """claims[k], read atomically: the writes a thread made before its add are seen."""
    def lower(context, builder, signature, args):
        return builder.load_atomic(_claim_pointer(context, builder, signature, args),
                                   "acquire", 8)

    return types.int64(claims, k), lower
