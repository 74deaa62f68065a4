"""The interpreter proper: the part of every generated tape interpreter that is the same for
every op table, as text that `generate.interpreter_source` appends after the op-specific part
(the constants, `apply`, `_unary`, `is_vector`, `MAX_BLOCK`, `SIMD`, which it uses). Text, not
functions: each table's interpreter is its own module, so that Numba caches each one apart.
Shipped rendered in `standard.py`, where it is linted and tested.

`run` executes a tape's blocks on one register file, `run_lanes` on a register file of many
points (one row per register, the lanes of a SIMD loop); `run_row`, `run_batch` and
`run_points` are the entry points Python calls (`symgraph.backends.tape.module`).
"""

INTERPRETER = '''\
@njit(error_model="numpy", inline="always")
def _sincos(x, sin_out, cos_out, n):
    """sin_out[:n], cos_out[:n] = sin(x[:n]), cos(x[:n]) (x may be sin_out): vecmath's shared
    reduction, with libm value by value beyond SIN_COS_LIMIT (never met in practice)."""
    far = 0
    for j in range(n):
        far |= _where(abs(x[j]) <= SIN_COS_LIMIT, 0, 1)
    if far:
        for j in range(n):
            v = x[j]
            near = abs(v) <= SIN_COS_LIMIT
            cos_out[j] = vcos(v) if near else math.cos(v)
            sin_out[j] = vsin(v) if near else math.sin(v)
    else:
        for j in range(n):
            v = x[j]
            sin_value, cos_value = vsincos(v)
            cos_out[j] = cos_value
            sin_out[j] = sin_value


@njit(cache=True, error_model="numpy", nogil=True)
def run(opcodes, operands, targets, blocks, regs, gathered):
    """Execute the instructions on the register file `regs` (modified in place), a block at a
    time: a block is a run of one op, so the op is decoded once per block, not per instruction.
    A vector block's operands are gathered into `gathered` (>= MAX_BLOCK floats), computed in
    one loop and scattered back: its instructions never read each other's results."""
    for k in range(blocks.shape[0] - 1):
        # Unsigned indices: no wraparound check for negative indices on every access.
        s, e = blocks[k], blocks[k + 1]
        op = opcodes[s]
        if op == ADD:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               + regs[np.uint32(operands[i, 1])])
        elif op == MUL:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               * regs[np.uint32(operands[i, 1])])
        elif op == SUB:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               - regs[np.uint32(operands[i, 1])])
        elif op == NMUL:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = -(regs[np.uint32(operands[i, 0])]
                                                * regs[np.uint32(operands[i, 1])])
        elif op == NEG:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = -regs[np.uint32(operands[i, 0])]
        elif op == DIV:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               / regs[np.uint32(operands[i, 1])])
        elif is_fused(op):
            _fused_rows(op, regs, operands, targets, s, e)
        elif op == SINCOS:
            n = e - s
            second = gathered[MAX_BLOCK:]
            for j in range(n):
                gathered[j] = regs[np.uint32(operands[s + j, 0])]
            padded = (n + SIMD - 1) // SIMD * SIMD
            gathered[n:padded] = 0.0
            _sincos(gathered, gathered, second, padded)
            for j in range(n):
                regs[np.uint32(targets[s + j])] = gathered[j]
                regs[np.uint32(operands[s + j, 2])] = second[j]
        elif is_vector(op):
            n = e - s
            for j in range(n):
                gathered[j] = regs[np.uint32(operands[s + j, 0])]
            # Whole SIMD vectors only: a loop's scalar remainder runs the vector code one
            # value at a time, no faster than libm.
            padded = (n + SIMD - 1) // SIMD * SIMD
            gathered[n:padded] = 0.0
            _unary(op, gathered, gathered, padded)
            for j in range(n):
                regs[np.uint32(targets[s + j])] = gathered[j]
        else:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = apply(op, regs[np.uint32(operands[i, 0])],
                                                    regs[np.uint32(operands[i, 1])],
                                                    regs[np.uint32(operands[i, 2])])


@njit(error_model="numpy", inline="always")
def _load(regs, x, constants):
    # Loops, not slice assignments: their shape check's error message needs Numba's string code.
    n = x.shape[0]
    for k in range(n):
        regs[k] = x[k]
    for k in range(constants.shape[0]):
        regs[n + k] = constants[k]


@njit(cache=True, error_model="numpy", nogil=True)
def run_row(opcodes, operands, targets, blocks, constants, outputs, n_registers, x, out, regs):
    """One point: inputs `x` (n_inputs,), results into `out` (len(outputs),); `regs` has
    n_registers + 2 * MAX_BLOCK floats (the tail: the vector blocks' buffers).

    The entry points allocate nothing and call no generic builtins (min, max): machine code that
    does refers to Numba modules (for their error messages), which then load with it."""
    _load(regs, x, constants)
    run(opcodes, operands, targets, blocks, regs, regs[n_registers:])
    for k in range(outputs.shape[0]):
        out[k] = regs[outputs[k]]


@njit(cache=True, error_model="numpy", nogil=True)
def run_lanes(opcodes, operands, targets, regs, lanes, constants, n_inputs):
    """`run` on `lanes` points at once: `regs` is (registers, >= lanes), a row per register;
    `constants` the tape's (in registers n_inputs ...), which immediate instructions read.

    Each instruction is decoded once and is one loop over the lanes, which LLVM vectorises for
    the arithmetic ops: dispatch is shared by the lanes, and the lanes are SIMD lanes. One
    dispatch per instruction, no blocks: the arithmetic ops are one chain of tests of `op`,
    which LLVM makes one switch (written here: in an inlined function returning whether it
    took the op, the lanes ran 1.4x slower: cubic_eos@74 4.2 -> 2.98 us, arrhenius@993 10.9 ->
    8.6, run_batch per point, one process, load 7.9). No test of which operand a target is: a
    batch's tape keeps every target apart from its operands' rows (`module.lane_tape`), so
    LLVM's runtime check that the rows do not overlap passes and the vector loop runs (a
    target that is an operand, as in other tapes, still gives the right numbers, in a scalar
    loop). Every op but the arithmetic, vector and sincos ones runs its own loop in `_lanes`.
    """
    for i in range(opcodes.shape[0]):
        op = opcodes[i]
        ti, ai = np.uint32(targets[i]), np.uint32(operands[i, 0])
        bi, ci = np.uint32(operands[i, 1]), np.uint32(operands[i, 2])
        # ARITHMETIC: the structural, fused and immediate ops' loops (`generate._arithmetic`)
        elif op == SINCOS:
            scratch = regs[regs.shape[0] - 1]  # a row of its own: no overlap for LLVM to check
            a = regs[ai]
            for j in range(lanes):  # (a slice copy would link Numba's string code)
                scratch[j] = a[j]
            _sincos(scratch, regs[ti], regs[ci], lanes)
        elif is_vector(op):
            t = regs[ti]
            if ti == ai:  # one array for both: LLVM sees no overlap to check at run time
                _unary(op, t, t, lanes)
            else:
                _unary(op, regs[ai], t, lanes)
        elif is_lane(op):
            scratch = regs[regs.shape[0] - 1]
            arity = _ARITY[op]
            # A target that is an operand's row is computed into the scratch row and copied: a
            # fix-up loop (vpow's) reads the operands after the vector loop.
            alias = ti == ai or (arity > 1 and ti == bi) or (arity > 2 and ti == ci)
            _lanes(op, regs[ai], regs[bi], regs[ci], scratch if alias else regs[ti], lanes)
            if alias:
                t = regs[ti]
                for j in range(lanes):
                    t[j] = scratch[j]
        else:  # every op has a loop above: unreachable, kept as `run` computes
            t, a = regs[ti], regs[ai]
            b, c = regs[bi], regs[ci]
            for j in range(lanes):
                t[j] = apply(op, a[j], b[j], c[j])


@njit(cache=True, error_model="numpy", nogil=True)
def run_batch(opcodes, operands, targets, blocks, constants, outputs, n_registers, X, OUT,
              regs):
    """Rows of `X` (N, n_inputs) into rows of `OUT` (N, len(outputs)), as many points at a
    time as `regs` (n_registers + 1, width) has columns: the caller's register file, so no
    point allocates (its last row is scratch for sincos). Serial and without the GIL:
    `symgraph.runtime.batching` runs parts of a batch on several threads."""
    rows, n, width = X.shape[0], X.shape[1], regs.shape[1]
    for k in range(constants.shape[0]):
        for j in range(width):
            regs[n + k, j] = constants[k]  # constants are never overwritten
    for first in range(0, rows, width):
        lanes = width if rows - first > width else rows - first
        for j in range(lanes):
            for k in range(n):
                regs[k, j] = X[first + j, k]
        run_lanes(opcodes, operands, targets, regs, lanes, constants, n)
        for j in range(lanes):
            for k in range(outputs.shape[0]):
                OUT[first + j, k] = regs[outputs[k], j]


@njit(cache=True, error_model="numpy", nogil=True)
def run_points(opcodes, operands, targets, blocks, constants, outputs, n_registers, X, OUT,
               regs):
    """`run_batch` one point at a time, on one register file (`regs` as for `run_row`): for
    tapes too big for lanes."""
    for i in range(X.shape[0]):
        _load(regs, X[i], constants)
        run(opcodes, operands, targets, blocks, regs, regs[n_registers:])
        for k in range(outputs.shape[0]):
            OUT[i, k] = regs[outputs[k]]
'''

