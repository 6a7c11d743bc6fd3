@nki.jit
def tuned_kernel(x, cos, sin):
    """Rotary embedding, rotate-half form (y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin per head), wide: per row
    tile of UNROLL_FACTOR tokens per partition, the tables are widened to every head once (doubling copies on
    GpSimd), the halves of every head gathered side by side (GATHER_BY_DMA: 1 SBUF-to-SBUF DMAs, 0 scalar-engine
    copies), six instructions cover all heads (ENGINE_SPLIT 1: the sin products on GpSimd), and the results
    are scattered back; every stream through PIPELINE_DEPTH rotating buffers."""
    seq, width = x.shape
    half = cos.shape[1]
    head_dim = 2 * half
    heads = width // head_dim
    y = nl.ndarray((seq, width), dtype=DTYPE, buffer=nl.shared_hbm)
    fold = UNROLL_FACTOR
    wide = heads * half  # one token's halves of every head, side by side
    sin_engine = nisa.gpsimd_engine if ENGINE_SPLIT == 1 else nisa.vector_engine
    x_tiles = _Pool(PIPELINE_DEPTH, (P, fold, width), DTYPE)
    y_tiles = _Pool(PIPELINE_DEPTH, (P, fold, width), DTYPE)
    raw_tables = _Pool(2 * PIPELINE_DEPTH, (P, fold, half), DTYPE)
    wide_tables = _Pool(2 * PIPELINE_DEPTH, (P, fold, wide), DTYPE)
    halves = _Pool(2 * PIPELINE_DEPTH, (P, fold, wide), DTYPE)
    products = _Pool(4, (P, fold, wide), nl.float32)
    results = _Pool(2, (P, fold, wide), DTYPE)

    def move(dst, src):
        if GATHER_BY_DMA:
            nisa.dma_copy(dst=dst, src=src)
        else:
            dst[...] = nisa.activation(op=nl.copy, data=src)

    for group in _folded_row_groups(seq, fold):
        _, rows, f_count = group
        xt = x_tiles.next()[0:rows, 0:f_count, :]
        xt[...] = nl.load(_folded(x, group, 0, width))
        c = raw_tables.next()[0:rows, 0:f_count, :]
        s = raw_tables.next()[0:rows, 0:f_count, :]
        c[...] = nl.load(_folded(cos, group, 0, half))
        s[...] = nl.load(_folded(sin, group, 0, half))

        def widen(table):
            out = wide_tables.next()[0:rows, 0:f_count, :]
            for t in range(f_count):
                out[:, t, 0:half] = nisa.tensor_copy(table[:, t, :], engine=nisa.gpsimd_engine)
                filled = 1
                while filled < heads:
                    n = min(filled, heads - filled)
                    out[:, t, filled * half:(filled + n) * half] = nisa.tensor_copy(out[:, t, 0:n * half],
                                                                                    engine=nisa.gpsimd_engine)
                    filled *= 2
            return out

        cw, sw = widen(c), widen(s)
        x1 = halves.next()[0:rows, 0:f_count, :]
        x2 = halves.next()[0:rows, 0:f_count, :]
        for t in range(f_count):
            for h in range(heads):
                at = h * head_dim
                move(x1[:, t, h * half:(h + 1) * half], xt[:, t, at:at + half])
                move(x2[:, t, h * half:(h + 1) * half], xt[:, t, at + half:at + head_dim])
        a = products.next()[0:rows, 0:f_count, :]
        b = products.next()[0:rows, 0:f_count, :]
        y1 = results.next()[0:rows, 0:f_count, :]
        a[...] = nisa.tensor_tensor(x1, cw, op=nl.multiply)
        b[...] = nisa.tensor_tensor(x2, sw, op=nl.multiply, engine=sin_engine)
        y1[...] = nisa.tensor_tensor(a, b, op=nl.subtract)
        a2 = products.next()[0:rows, 0:f_count, :]
        b2 = products.next()[0:rows, 0:f_count, :]
        y2 = results.next()[0:rows, 0:f_count, :]
        a2[...] = nisa.tensor_tensor(x2, cw, op=nl.multiply)
        b2[...] = nisa.tensor_tensor(x1, sw, op=nl.multiply, engine=sin_engine)
        y2[...] = nisa.tensor_tensor(a2, b2, op=nl.add)
        yt = y_tiles.next()[0:rows, 0:f_count, :]
        for t in range(f_count):
            for h in range(heads):
                at = h * head_dim
                move(yt[:, t, at:at + half], y1[:, t, h * half:(h + 1) * half])
                move(yt[:, t, at + half:at + head_dim], y2[:, t, h * half:(h + 1) * half])
        nl.store(_folded(y, group, 0, width), value=yt)
    return y
