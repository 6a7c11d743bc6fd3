@nki.jit
def tuned_kernel(x, gamma):
    """y = x / sqrt(mean(x^2) + EPSILON) * gamma, fused: per chunk of TILE_SIZE columns one activation squares
    and sums the rows, one rsqrt gives 1/rms, then x * (1/rms) * gamma per chunk; row tiles of UNROLL_FACTOR
    rows per partition stream through PIPELINE_DEPTH rotating buffers."""
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=DTYPE, buffer=nl.shared_hbm)
    chunks = _tiles(cols, TILE_SIZE)
    gamma_bcast = _Pool(1, (P, cols), DTYPE).next()
    _broadcast_to_partitions(gamma_bcast, gamma)
    x_tiles = _Pool(PIPELINE_DEPTH, (P, UNROLL_FACTOR, cols), DTYPE)
    y_tiles = _Pool(PIPELINE_DEPTH, (P, UNROLL_FACTOR, cols), DTYPE)
    square_chunks = _Pool(2, (P, TILE_SIZE), nl.float32)  # discarded: only the row sums are kept
    chunk_sums = _Pool(PIPELINE_DEPTH, (P, UNROLL_FACTOR * len(chunks)), nl.float32)
    row_sums = _Pool(PIPELINE_DEPTH, (P, UNROLL_FACTOR), nl.float32)
    inv_rms_pool = _Pool(PIPELINE_DEPTH, (P, UNROLL_FACTOR), nl.float32)
    epsilon = _Pool(1, (P, 1), nl.float32).next()  # the bias as a column: NeuronCore v2 takes no constant bias
    nisa.memset(dst=epsilon, value=EPSILON)
    for group in _folded_row_groups(rows, UNROLL_FACTOR):
        _, parts, fold = group
        xt = x_tiles.next()
        for c in chunks:  # one DMA per chunk moves it for all `fold` rows of each partition
            nisa.dma_copy(dst=xt[0:parts, 0:fold, c.begin:c.end], src=_folded(x, group, c.begin, c.end))
        sums = chunk_sums.next()[0:parts, :]
        inv = inv_rms_pool.next()[0:parts, :]
        total = row_sums.next()[0:parts, :]
        for f in range(fold):
            for c in chunks:
                column = f * len(chunks) + c.index
                discarded = square_chunks.next()[0:parts, 0:c.size]
                nisa.activation_reduce(dst=discarded, op=nl.square, data=xt[0:parts, f, c.begin:c.end], reduce_op=nl.add, reduce_res=sums[:, column:column + 1])
            row_sum = sums[:, f * len(chunks):f * len(chunks) + 1]
            if len(chunks) > 1:
                row_sum = total[:, f:f + 1]
                nisa.tensor_reduce(dst=row_sum, op=nl.add, data=sums[:, f * len(chunks):(f + 1) * len(chunks)], axis=(1,), keepdims=True)
            nisa.activation(dst=inv[:, f:f + 1], op=nl.rsqrt, data=row_sum, bias=epsilon[0:parts, :], scale=1.0 / cols)
        yt = y_tiles.next()
        for c in chunks:
            for f in range(fold):
                y_chunk = yt[0:parts, f, c.begin:c.end]
                nisa.tensor_scalar(dst=y_chunk, data=xt[0:parts, f, c.begin:c.end], op0=nl.multiply, operand0=inv[:, f:f + 1])
                nisa.tensor_tensor(dst=y_chunk, data1=y_chunk, data2=gamma_bcast[0:parts, c.begin:c.end], op=nl.multiply)
            nisa.dma_copy(dst=_folded(y, group, c.begin, c.end), src=yt[0:parts, 0:fold, c.begin:c.end])
    return y
