COL_CHUNK = 512      # key columns per score matmul (one PSUM bank)
CHUNKS_PER_BANK = 4  # transposed [128, 128] blocks of P per PSUM bank
DTYPE_BYTES = {nl.float32: 4, nl.bfloat16: 2, nl.float16: 2}


def _keeps_scores_on_chip(seq, d):
    """Whether a head's S (fp32) and P fit in SBUF beside the tiles of the largest pass."""
    tiles = -(-seq // P)
    nbytes = DTYPE_BYTES[DTYPE]
    pass1 = seq * nbytes + 2 * P * nbytes
    pass3 = tiles * d * nbytes + 2 * CHUNKS_PER_BANK * P * nbytes + 2 * d * nbytes
    return tiles * seq * (4 + nbytes) + max(pass1, 4 * 4, pass3) <= SBUF_BYTES_PER_PARTITION


@nki.jit
def tuned_kernel(q_t, k_t, v):
    """Causal attention with grouped-query heads, unfused. Layout: q_t [q_heads * d, seq], k_t [kv_heads * d, seq],
    v [kv_heads * seq, d], out [q_heads * seq, d]. Pass 1: S = mask(Q K^T / sqrt(d)); pass 2: P = softmax(S)
    over whole rows; pass 3: O = P V with P^T on the tensor engine. A head's S and P stay in SBUF when they fit
    (SBUF_BYTES_PER_PARTITION, the target's), head by head; otherwise every head's round-trip through HBM."""
    d = v.shape[1]
    seq = q_t.shape[1]
    q_heads, kv_heads = q_t.shape[0] // d, k_t.shape[0] // d
    group = q_heads // kv_heads
    out = nl.ndarray((q_heads * seq, d), dtype=DTYPE, buffer=nl.shared_hbm)
    scale = 1.0 / d ** 0.5
    on_chip = _keeps_scores_on_chip(seq, d)
    heads_per_round = 1 if on_chip else q_heads
    row_tiles = _tiles(seq, P)
    if on_chip:  # row tile i of a head in columns [i seq, (i + 1) seq)
        s_head_pool = _Pool(1, (P, len(row_tiles) * seq), nl.float32)
        p_head_pool = _Pool(1, (P, len(row_tiles) * seq), DTYPE)
    else:
        scores = nl.ndarray((q_heads * seq, seq), dtype=nl.float32, buffer=nl.hbm)
        probs = nl.ndarray((q_heads * seq, seq), dtype=DTYPE, buffer=nl.hbm)

    for h0 in range(0, q_heads, heads_per_round):
        if on_chip:
            s_head, p_head = s_head_pool.next(), p_head_pool.next()

        def rows_of(on_chip_tile, spill, h, q0, rows):
            """Rows [q0, q0 + rows) of head h's S or P: in the head's SBUF tile, or in HBM."""
            if on_chip:
                c0 = q0 // P * seq
                return on_chip_tile[0:rows, c0:c0 + seq]
            return spill[h * seq + q0:h * seq + q0 + rows, :]

        def s_rows(h, q0, rows):
            return rows_of(s_head if on_chip else None, None if on_chip else scores, h, q0, rows)

        def p_rows(h, q0, rows):
            return rows_of(p_head if on_chip else None, None if on_chip else probs, h, q0, rows)

        def readable(block, staging):
            """A row block of S or P to compute on: itself on chip, else read back from HBM."""
            if on_chip:
                return block
            staged = staging.next()[0:block.shape[0], 0:seq]
            nisa.dma_copy(dst=staged, src=block)
            return staged

        heads = range(h0, h0 + heads_per_round)
        # Pass 1: S = mask(Q K^T * scale), chunk by chunk.
        k_pool = _Pool(1, (d, seq), DTYPE)
        q_pool = _Pool(2, (d, P), DTYPE)
        s_psum = _Pool(2, (P, COL_CHUNK), nl.float32, buffer=nl.psum)
        s_pool = None if on_chip else _Pool(2, (P, COL_CHUNK), nl.float32)
        for h in heads:
            g = h // group
            kt = k_pool.next()
            nisa.dma_copy(dst=kt, src=k_t[g * d:(g + 1) * d, :])
            for r in row_tiles:
                qt = q_pool.next()[:, 0:r.size]
                nisa.dma_copy(dst=qt, src=q_t[h * d:(h + 1) * d, r.begin:r.end])
                s_row = s_rows(h, r.begin, r.size)
                for c in _tiles(seq, COL_CHUNK):
                    s_ps = s_psum.next()[0:r.size, 0:c.size]
                    nisa.nc_matmul(dst=s_ps, stationary=qt, moving=kt[:, c.begin:c.end], accumulate=False)
                    s = s_row[:, c.begin:c.end] if on_chip else s_pool.next()[0:r.size, 0:c.size]
                    nisa.activation(dst=s, op=nl.copy, data=s_ps, scale=scale)
                    if CAUSAL:
                        _causal_mask(s, s, r.begin, c.begin)
                    if not on_chip:
                        nisa.dma_copy(dst=s_row[:, c.begin:c.end], src=s)
        # Pass 2: P = softmax(S) over whole rows.
        s_pool = None if on_chip else _Pool(1, (P, seq), nl.float32)
        p_pool = None if on_chip else _Pool(1, (P, seq), DTYPE)
        col_pool = _Pool(4, (P, 1), nl.float32)
        for h in heads:
            for r in row_tiles:
                s = readable(s_rows(h, r.begin, r.size), s_pool)
                row_max = col_pool.next()[0:r.size, :]
                nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=s, axis=(1,), keepdims=True)
                neg_max = col_pool.next()[0:r.size, :]
                nisa.tensor_scalar(dst=neg_max, data=row_max, op0=nl.multiply, operand0=-1.0)
                row_sum = col_pool.next()[0:r.size, :]
                nisa.activation_reduce(dst=s, op=nl.exp, data=s, bias=neg_max, reduce_op=nl.add, reduce_res=row_sum)
                inv_sum = col_pool.next()[0:r.size, :]
                nisa.reciprocal(dst=inv_sum, data=row_sum)
                p_row = p_rows(h, r.begin, r.size)
                p = p_row if on_chip else p_pool.next()[0:r.size, :]
                nisa.tensor_scalar(dst=p, data=s, op0=nl.multiply, operand0=inv_sum)
                if not on_chip:
                    nisa.dma_copy(dst=p_row, src=p)
        # Pass 3: O = P V, P transposed on the tensor engine (the contraction over keys needs keys on partitions).
        chunks = len(row_tiles)
        v_pool = _Pool(1, (P, chunks * d), DTYPE)
        p_pool = None if on_chip else _Pool(1, (P, seq), DTYPE)
        pt_psum = _Pool(2, (P, CHUNKS_PER_BANK * P), DTYPE, buffer=nl.psum)  # a transpose keeps the dtype
        pt_pool = _Pool(2, (P, CHUNKS_PER_BANK * P), DTYPE)
        o_psum = _Pool(2, (P, d), nl.float32, buffer=nl.psum)
        o_pool = _Pool(2, (P, d), DTYPE)
        for h in heads:
            g = h // group
            vt = v_pool.next()
            for c in row_tiles:
                nisa.dma_copy(dst=vt[0:c.size, c.index * d:(c.index + 1) * d], src=v[g * seq + c.begin:g * seq + c.end, :])
            for r in row_tiles:
                rows = r.size
                p = readable(p_rows(h, r.begin, rows), p_pool)
                o_ps = o_psum.next()[0:rows, :]
                for c0 in range(0, chunks, CHUNKS_PER_BANK):
                    in_bank = min(CHUNKS_PER_BANK, chunks - c0)
                    pt_ps, pt = pt_psum.next(), pt_pool.next()
                    full_chunks = 0
                    for j in range(in_bank):
                        k0 = (c0 + j) * P
                        crows = min(P, seq - k0)
                        nisa.nc_transpose(dst=pt_ps[0:crows, j * rows:(j + 1) * rows], data=p[:, k0:k0 + crows])
                        if crows == P:
                            full_chunks = j + 1
                    if full_chunks > 0:
                        nisa.tensor_copy(dst=pt[:, 0:full_chunks * rows], src=pt_ps[:, 0:full_chunks * rows])
                    if full_chunks < in_bank:  # the ragged last chunk
                        crows = seq - (c0 + full_chunks) * P
                        nisa.tensor_copy(dst=pt[0:crows, full_chunks * rows:in_bank * rows], src=pt_ps[0:crows, full_chunks * rows:in_bank * rows])
                    for j in range(in_bank):
                        c = c0 + j
                        crows = min(P, seq - c * P)
                        nisa.nc_matmul(dst=o_ps, stationary=pt[0:crows, j * rows:(j + 1) * rows],
                                       moving=vt[0:crows, c * d:(c + 1) * d], accumulate=c > 0)
                o = o_pool.next()[0:rows, :]
                nisa.tensor_copy(dst=o, src=o_ps)
                nisa.dma_copy(dst=out[h * seq + r.begin:h * seq + r.end, :], src=o)
    return out
