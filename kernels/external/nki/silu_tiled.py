@nki.jit
def tuned_kernel(x):
    """out = silu(x) over [rows, cols] in tiles of [P, UNROLL_FACTOR, TILE_SIZE] (UNROLL_FACTOR consecutive rows
    per partition) through PIPELINE_DEPTH rotating buffers. ENGINE 0: one silu activation on the scalar
    engine; 1: a sigmoid there and the product with x on the vector engine; 2: the product on GpSimd."""
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=DTYPE, buffer=nl.shared_hbm)
    shape = (P, UNROLL_FACTOR, TILE_SIZE)
    x_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    work_tiles = _Pool(2, shape, nl.float32)
    out_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    for group in _folded_row_groups(rows, UNROLL_FACTOR):
        _, parts, fold = group
        for c in _tiles(cols, TILE_SIZE):
            xt = x_tiles.next()[0:parts, 0:fold, 0:c.size]
            nisa.dma_copy(dst=xt, src=_folded(x, group, c.begin, c.end))
            ot = out_tiles.next()[0:parts, 0:fold, 0:c.size]
            if ENGINE == 0:
                nisa.activation(dst=ot, op=nl.silu, data=xt)
            else:
                work = work_tiles.next()[0:parts, 0:fold, 0:c.size]
                nisa.activation(dst=work, op=nl.sigmoid, data=xt)
                engine = nisa.engine.gpsimd if ENGINE == 2 else nisa.engine.vector
                nisa.tensor_tensor(dst=ot, data1=work, data2=xt, op=nl.multiply, engine=engine)
            nisa.dma_copy(dst=_folded(out, group, c.begin, c.end), src=ot)
    return out
