@nki.jit
def tuned_kernel(x, batch=BATCH):
    """y[b * cols + c, r] = x[b * rows + r, c] on the tensor engine, pipelined: [P, TILE_SIZE] strips of x
    loaded by one DMA each; the blocks of BLOCKS_PER_BANK row tiles transposed into one PSUM bank, drained by
    one instruction (EVACUATE_ENGINE: 0 vector, 1 scalar, 2 GpSimd) and stored by one DMA."""
    rows, cols = x.shape[0] // batch, x.shape[1]
    y = nl.ndarray((batch * cols, rows), dtype=DTYPE, buffer=nl.shared_hbm)
    group = BLOCKS_PER_BANK
    strips = _Pool(PIPELINE_DEPTH * group, (P, TILE_SIZE), DTYPE)
    psum = _Pool(2, (P, group * P), nl.float32, buffer=nl.psum)
    pieces = _Pool(PIPELINE_DEPTH, (P, group * P), DTYPE)
    for b in range(batch):
        for rg in _tiles(rows, group * P):  # row tiles drained together
            for strip in _tiles(cols, TILE_SIZE):  # columns loaded together
                loaded = []
                for r in _tiles(rg.size, P):
                    s = strips.next()[0:r.size, 0:strip.size]
                    first = b * rows + rg.begin + r.begin
                    s[...] = nl.load(x[first:first + r.size, strip.begin:strip.end])
                    loaded.append(s)
                for c in _tiles(strip.size, P):
                    bank = psum.next()[0:c.size, 0:rg.size]
                    for r in _tiles(rg.size, P):
                        bank[:, r.begin:r.end] = nisa.nc_transpose(loaded[r.index][:, c.begin:c.end])
                    piece = pieces.next()[0:c.size, 0:rg.size]
                    if EVACUATE_ENGINE == 1:
                        piece[...] = nisa.activation(op=nl.copy, data=bank)
                    else:
                        engine = nisa.gpsimd_engine if EVACUATE_ENGINE == 2 else nisa.vector_engine
                        piece[...] = nisa.tensor_copy(bank, engine=engine)
                    y_row = b * cols + strip.begin + c.begin
                    nl.store(y[y_row:y_row + c.size, rg.begin:rg.end], value=piece)
    return y
