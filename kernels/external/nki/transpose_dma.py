@nki.jit
def tuned_kernel(x, batch=BATCH):
    """y[b * cols + c, r] = x[b * rows + r, c] by transposing DMAs (the hardware DMA transposer for 2-byte data):
    each [TILE_SIZE, 128] piece of x lands in SBUF as [128, TILE_SIZE] and is stored as it is."""
    rows, cols = x.shape[0] // batch, x.shape[1]
    y = nl.ndarray((batch * cols, rows), dtype=DTYPE, buffer=nl.shared_hbm)
    pieces = _Pool(PIPELINE_DEPTH, (P, TILE_SIZE), DTYPE)
    for b in range(batch):
        for c in _tiles(cols, P):
            for r in _tiles(rows, TILE_SIZE):
                piece = pieces.next()[0:c.size, 0:r.size]
                nisa.dma_transpose(dst=piece, src=x[b * rows + r.begin:b * rows + r.end, c.begin:c.end])
                nisa.dma_copy(dst=y[b * cols + c.begin:b * cols + c.end, r.begin:r.end], src=piece)
    return y
