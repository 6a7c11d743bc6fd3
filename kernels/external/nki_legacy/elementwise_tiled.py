@nki.jit
def tuned_kernel(a, b):
    """OPERATION over [rows, cols] ("add": a + b; "silu_mul": silu(a) * b) in tiles of [P, UNROLL_FACTOR,
    TILE_SIZE] (UNROLL_FACTOR consecutive rows per partition) through PIPELINE_DEPTH rotating buffers, the
    vector-class instruction on the engine ENGINE names (0 vector, 1 GpSimd, 2 alternating by tile)."""
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=DTYPE, buffer=nl.shared_hbm)
    shape = (P, UNROLL_FACTOR, TILE_SIZE)
    a_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    b_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    work_tiles = _Pool(2, shape, nl.float32)
    out_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    step = 0
    for group in _folded_row_groups(rows, UNROLL_FACTOR):
        _, parts, fold = group
        for c in _tiles(cols, TILE_SIZE):
            at = a_tiles.next()[0:parts, 0:fold, 0:c.size]
            bt = b_tiles.next()[0:parts, 0:fold, 0:c.size]
            at[...] = nl.load(_folded(a, group, c.begin, c.end))
            bt[...] = nl.load(_folded(b, group, c.begin, c.end))
            use_gpsimd = ENGINE == 1 or (ENGINE == 2 and step % 2 == 1)
            engine = nisa.gpsimd_engine if use_gpsimd else nisa.vector_engine
            step += 1
            ot = out_tiles.next()[0:parts, 0:fold, 0:c.size]
            if OPERATION == "add":
                ot[...] = nisa.tensor_tensor(at, bt, op=nl.add, engine=engine)
            else:
                work = work_tiles.next()[0:parts, 0:fold, 0:c.size]
                work[...] = nisa.activation(op=nl.silu, data=at)
                ot[...] = nisa.tensor_tensor(work, bt, op=nl.multiply, engine=engine)
            nl.store(_folded(out, group, c.begin, c.end), value=ot)
    return out
