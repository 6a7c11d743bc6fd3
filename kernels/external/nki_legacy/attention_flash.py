@nki.jit
def tuned_kernel(q_t, k_t, v):
    """Causal flash attention with grouped-query heads. Layout: q_t [q_heads * d, seq], k_t [kv_heads * d, seq],
    v [kv_heads * seq, d], out [q_heads * seq, d].

    Online softmax over key tiles of KV_TILE keys (running max and sum, the accumulator rescaled by
    exp(m_old - m_new)); fully masked tiles skipped, diagonal tiles masked with affine_select; each K/V tile
    reused by UNROLL_FACTOR query tiles of Q_TILE rows of every query head sharing its kv head; P^T on the
    tensor engine, evacuated by the scalar engine; PIPELINE_DEPTH steps in flight (_StepPipeline)."""
    d = v.shape[1]
    seq = q_t.shape[1]
    q_heads, kv_heads = q_t.shape[0] // d, k_t.shape[0] // d
    group = q_heads // kv_heads
    out = nl.ndarray((q_heads * seq, d), dtype=DTYPE, buffer=nl.shared_hbm)
    q_tile, kv_tile = Q_TILE, KV_TILE
    block_rows = q_tile * UNROLL_FACTOR  # query rows per K/V pass, per query head
    kv_chunks = -(-kv_tile // P)  # 128-key blocks of one key tile
    tiles_per_block = -(-min(block_rows, seq) // q_tile) * group
    lookahead = max(PIPELINE_DEPTH, 1) - 1
    depth = lookahead + 1
    scale = 1.0 / d ** 0.5

    # Steps in flight span at most `depth` key tiles and lookahead + 2 query blocks.
    k_pool = _Pool(depth, (d, kv_tile), DTYPE)
    v_pool = _Pool(depth, (P, kv_chunks * d), DTYPE)
    q_pool = _Pool(2 * group, (d, block_rows), DTYPE)
    acc_pool = _Pool((lookahead + 2) * tiles_per_block, (q_tile, d), nl.float32)
    stats_pool = _Pool((lookahead + 2) * tiles_per_block, (q_tile, 3), nl.float32)  # max, next max, sum
    p_pool = _Pool(depth, (q_tile, kv_tile), DTYPE)
    alpha_pool = _Pool(depth + 1, (q_tile, 1), nl.float32)
    s_psum = _Pool(2, (q_tile, kv_tile), nl.float32, buffer=nl.psum)
    pt_psum = _Pool(2, (P, kv_chunks * q_tile), nl.float32, buffer=nl.psum)
    pv_psum = _Pool(2, (q_tile, d), nl.float32, buffer=nl.psum)
    masked_pool = _Pool(2, (q_tile, kv_tile), nl.float32)
    pt_pool = _Pool(2, (P, kv_chunks * q_tile), DTYPE)
    col_pool = _Pool(8, (q_tile, 1), nl.float32)
    out_pool = _Pool(2, (q_tile, d), DTYPE)

    def scores_and_max(s):
        """Scores, the causal mask on diagonal tiles, the new running max."""
        t, rows = s.tile, s.tile.rows
        s_ps = s_psum.next()[0:rows, 0:s.cols]
        s_ps[...] = nisa.nc_matmul(t.q_t, s.k_t)
        s.scores = s_ps
        if s.k0 + s.cols - 1 > t.q0:  # the tile crosses the diagonal
            s.scores = masked_pool.next()[0:rows, 0:s.cols]
            s.scores[...] = nisa.tensor_copy(s_ps)
            s.scores[...] = _causal_mask(s.scores, t.q0, s.k0)
        m_old = t.stats[:, t.max_col:t.max_col + 1]
        m_new = t.stats[:, 1 - t.max_col:2 - t.max_col]
        if s.first:
            m_new[...] = nisa.tensor_reduce(op=nl.max, data=s.scores, axis=(1,), keepdims=True)
        else:
            tile_max = col_pool.next()[0:rows, :]
            tile_max[...] = nisa.tensor_reduce(op=nl.max, data=s.scores, axis=(1,), keepdims=True)
            m_new[...] = nisa.tensor_tensor(m_old, tile_max, op=nl.maximum)
        s.neg_scaled_max = col_pool.next()[0:rows, :]
        s.neg_scaled_max[...] = nisa.tensor_scalar(m_new, op0=nl.multiply, operand0=-scale)

    def probabilities(s):
        """P = exp(scale S - scale m) with its row sums; alpha = exp(scale (m_old - m_new)) and the running sum."""
        t, rows = s.tile, s.tile.rows
        l = t.stats[:, 2:3]
        s.probs = p_pool.next()[0:rows, 0:s.cols]
        row_sum = l if s.first else col_pool.next()[0:rows, :]
        s.probs[...] = nisa.activation_reduce(op=nl.exp, data=s.scores, bias=s.neg_scaled_max, scale=scale,
                                              reduce_op=nl.add, reduce_res=row_sum)
        if not s.first:
            m_old = t.stats[:, t.max_col:t.max_col + 1]
            s.alpha = alpha_pool.next()[0:rows, :]
            s.alpha[...] = nisa.activation(op=nl.exp, data=m_old, bias=s.neg_scaled_max, scale=scale)
            l[...] = nisa.tensor_scalar(l, op0=nl.multiply, operand0=s.alpha, op1=nl.add, operand1=row_sum)
        t.max_col = 1 - t.max_col

    def transpose_probs(s):
        """P^T in 128-key blocks on the tensor engine, evacuated by the scalar engine."""
        rows = s.tile.rows
        chunks = -(-s.cols // P)
        pt_ps = pt_psum.next()
        s.probs_t = pt_pool.next()
        for c in range(chunks):
            crows = min(P, s.cols - c * P)
            pt_ps[0:crows, c * rows:(c + 1) * rows] = nisa.nc_transpose(s.probs[:, c * P:c * P + crows])
        full_chunks = s.cols // P
        if full_chunks > 0:
            s.probs_t[:, 0:full_chunks * rows] = nisa.activation(op=nl.copy, data=pt_ps[:, 0:full_chunks * rows])
        if full_chunks < chunks:  # the ragged last block of keys
            crows = s.cols - full_chunks * P
            s.probs_t[0:crows, full_chunks * rows:chunks * rows] = nisa.activation(
                op=nl.copy, data=pt_ps[0:crows, full_chunks * rows:chunks * rows])

    def probs_times_v(s):
        """P V accumulated over the key blocks in one PSUM tile."""
        rows = s.tile.rows
        s.pv = pv_psum.next()[0:rows, :]
        for c in range(-(-s.cols // P)):
            crows = min(P, s.cols - c * P)
            product = nisa.nc_matmul(s.probs_t[0:crows, c * rows:(c + 1) * rows], s.v[0:crows, c * d:(c + 1) * d])
            if c > 0:
                s.pv[...] += product
            else:
                s.pv[...] = product

    def accumulate(s):
        """acc = acc * alpha + P V; after the tile's last step, out = acc / l."""
        t = s.tile
        if s.first:
            t.acc[...] = nisa.tensor_copy(s.pv)
        else:
            t.acc[...] = nisa.tensor_scalar(t.acc, op0=nl.multiply, operand0=s.alpha)
            t.acc[...] = nisa.tensor_tensor(t.acc, s.pv, op=nl.add)
        t.steps_left -= 1
        if t.steps_left > 0:
            return
        inv_sum = col_pool.next()[0:t.rows, :]
        inv_sum[...] = nisa.reciprocal(t.stats[:, 2:3])
        o = out_pool.next()[0:t.rows, :]
        o[...] = nisa.tensor_scalar(t.acc, op0=nl.multiply, operand0=inv_sum)
        row0 = t.head * seq + t.q0
        nl.store(out[row0:row0 + t.rows, :], value=o)

    pipeline = _StepPipeline(lookahead, scores_and_max, probabilities, transpose_probs, probs_times_v, accumulate)
    for g in range(kv_heads):
        for block in _tiles(seq, block_rows):
            block_tiles = []
            for j in range(group):
                h = g * group + j
                q_block = q_pool.next()
                q_block[:, 0:block.size] = nl.load(q_t[h * d:(h + 1) * d, block.begin:block.end])
                for q in _tiles(block.size, q_tile, block.begin):
                    block_tiles.append(_Record(
                        head=h, q0=q.begin, rows=q.size, q_t=q_block[:, q.offset:q.offset + q.size],
                        acc=acc_pool.next()[0:q.size, :], stats=stats_pool.next()[0:q.size, :], max_col=0,
                        steps_left=-(-q.end // kv_tile)))  # causal: key tiles starting at or before its last row
            for kv in _tiles(block.end, kv_tile):  # key tiles after the block's last query are never needed
                cols = min(kv_tile, seq - kv.begin)
                kt = k_pool.next()[:, 0:cols]
                kt[...] = nl.load(k_t[g * d:(g + 1) * d, kv.begin:kv.begin + cols])
                vt = v_pool.next()
                for c in range(-(-cols // P)):
                    crows = min(P, cols - c * P)
                    row0 = g * seq + kv.begin + c * P
                    vt[0:crows, c * d:(c + 1) * d] = nl.load(v[row0:row0 + crows, :])
                for t in block_tiles:
                    if kv.begin > t.q0 + t.rows - 1:
                        continue  # fully masked for this query tile
                    pipeline.issue(_Record(tile=t, k0=kv.begin, cols=cols, first=kv.index == 0, k_t=kt, v=vt))
    pipeline.drain()
    return out
