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
            nisa.dma_copy(dst=at, src=_folded(a, group, c.begin, c.end))
            nisa.dma_copy(dst=bt, src=_folded(b, group, c.begin, c.end))
            use_gpsimd = ENGINE == 1 or (ENGINE == 2 and step % 2 == 1)
            engine = nisa.engine.gpsimd if use_gpsimd else nisa.engine.vector
            step += 1
            ot = out_tiles.next()[0:parts, 0:fold, 0:c.size]
            if OPERATION == "add":
                nisa.tensor_tensor(dst=ot, data1=at, data2=bt, op=nl.add, engine=engine)
            else:
                work = work_tiles.next()[0:parts, 0:fold, 0:c.size]
                nisa.activation(dst=work, op=nl.silu, data=at)
                nisa.tensor_tensor(dst=ot, data1=work, data2=bt, op=nl.multiply, engine=engine)
            nisa.dma_copy(dst=_folded(out, group, c.begin, c.end), src=ot)
    return out
