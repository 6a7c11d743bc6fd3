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
    pt_psum = _Pool(2, (P, kv_chunks * q_tile), DTYPE, buffer=nl.psum)  # a transpose keeps the dtype
    pv_psum = _Pool(2, (q_tile, d), nl.float32, buffer=nl.psum)
    masked_pool = _Pool(2, (q_tile, kv_tile), nl.float32)
    pt_pool = _Pool(2, (P, kv_chunks * q_tile), DTYPE)
    col_pool = _Pool(8, (q_tile, 1), nl.float32)
    out_pool = _Pool(2, (q_tile, d), DTYPE)

    def scores_and_max(s):
        """Scores, the causal mask on diagonal tiles, the new running max."""
        t, rows = s.tile, s.tile.rows
        s_ps = s_psum.next()[0:rows, 0:s.cols]
        nisa.nc_matmul(dst=s_ps, stationary=t.q_t, moving=s.k_t, accumulate=False)
        s.scores = s_ps
        if CAUSAL and s.k0 + s.cols - 1 > t.q0:  # the tile crosses the diagonal
            s.scores = masked_pool.next()[0:rows, 0:s.cols]
            nisa.tensor_copy(dst=s.scores, src=s_ps)
            _causal_mask(s.scores, s.scores, t.q0, s.k0)
        m_old = t.stats[:, t.max_col:t.max_col + 1]
        m_new = t.stats[:, 1 - t.max_col:2 - t.max_col]
        if s.first:
            nisa.tensor_reduce(dst=m_new, op=nl.maximum, data=s.scores, axis=(1,), keepdims=True)
        else:
            tile_max = col_pool.next()[0:rows, :]
            nisa.tensor_reduce(dst=tile_max, op=nl.maximum, data=s.scores, axis=(1,), keepdims=True)
            nisa.tensor_tensor(dst=m_new, data1=m_old, data2=tile_max, op=nl.maximum)
        s.neg_scaled_max = col_pool.next()[0:rows, :]
        nisa.tensor_scalar(dst=s.neg_scaled_max, data=m_new, op0=nl.multiply, operand0=-scale)

    def probabilities(s):
        """P = exp(scale S - scale m) with its row sums; alpha = exp(scale (m_old - m_new)) and the running sum."""
        t, rows = s.tile, s.tile.rows
        l = t.stats[:, 2:3]
        s.probs = p_pool.next()[0:rows, 0:s.cols]
        row_sum = l if s.first else col_pool.next()[0:rows, :]
        nisa.activation_reduce(dst=s.probs, op=nl.exp, data=s.scores, bias=s.neg_scaled_max, scale=scale, reduce_op=nl.add, reduce_res=row_sum)
        if not s.first:
            m_old = t.stats[:, t.max_col:t.max_col + 1]
            s.alpha = alpha_pool.next()[0:rows, :]
            nisa.activation(dst=s.alpha, op=nl.exp, data=m_old, bias=s.neg_scaled_max, scale=scale)
            nisa.tensor_scalar(dst=l, data=l, op0=nl.multiply, operand0=s.alpha, op1=nl.add, operand1=row_sum)
        t.max_col = 1 - t.max_col

    def transpose_probs(s):
        """P^T in 128-key blocks on the tensor engine, evacuated by the scalar engine."""
        rows = s.tile.rows
        chunks = -(-s.cols // P)
        pt_ps = pt_psum.next()
        s.probs_t = pt_pool.next()
        for c in range(chunks):
            crows = min(P, s.cols - c * P)
            nisa.nc_transpose(dst=pt_ps[0:crows, c * rows:(c + 1) * rows], data=s.probs[:, c * P:c * P + crows])
        full_chunks = s.cols // P
        if full_chunks > 0:
            nisa.activation(dst=s.probs_t[:, 0:full_chunks * rows], op=nl.copy, data=pt_ps[:, 0:full_chunks * rows])
        if full_chunks < chunks:  # the ragged last block of keys
            crows = s.cols - full_chunks * P
            nisa.activation(dst=s.probs_t[0:crows, full_chunks * rows:chunks * rows], op=nl.copy, data=pt_ps[0:crows, full_chunks * rows:chunks * rows])

    def probs_times_v(s):
        """P V accumulated over the key blocks in one PSUM tile."""
        rows = s.tile.rows
        s.pv = pv_psum.next()[0:rows, :]
        for c in range(-(-s.cols // P)):
            crows = min(P, s.cols - c * P)
            nisa.nc_matmul(dst=s.pv, stationary=s.probs_t[0:crows, c * rows:(c + 1) * rows],
                           moving=s.v[0:crows, c * d:(c + 1) * d], accumulate=c > 0)

    def accumulate(s):
        """acc = acc * alpha + P V; after the tile's last step, out = acc / l."""
        t = s.tile
        if s.first:
            nisa.tensor_copy(dst=t.acc, src=s.pv)
        else:
            nisa.tensor_scalar(dst=t.acc, data=t.acc, op0=nl.multiply, operand0=s.alpha)
            nisa.tensor_tensor(dst=t.acc, data1=t.acc, data2=s.pv, op=nl.add)
        t.steps_left -= 1
        if t.steps_left > 0:
            return
        inv_sum = col_pool.next()[0:t.rows, :]
        nisa.reciprocal(dst=inv_sum, data=t.stats[:, 2:3])
        o = out_pool.next()[0:t.rows, :]
        nisa.tensor_scalar(dst=o, data=t.acc, op0=nl.multiply, operand0=inv_sum)
        row0 = t.head * seq + t.q0
        nisa.dma_copy(dst=out[row0:row0 + t.rows, :], src=o)

    pipeline = _StepPipeline(lookahead, scores_and_max, probabilities, transpose_probs, probs_times_v, accumulate)
    for g in range(kv_heads):
        for block in _tiles(seq, block_rows):
            block_tiles = []
            for j in range(group):
                h = g * group + j
                q_block = q_pool.next()
                nisa.dma_copy(dst=q_block[:, 0:block.size], src=q_t[h * d:(h + 1) * d, block.begin:block.end])
                for q in _tiles(block.size, q_tile, block.begin):
                    block_tiles.append(_Record(
                        head=h, q0=q.begin, rows=q.size, q_t=q_block[:, q.offset:q.offset + q.size],
                        acc=acc_pool.next()[0:q.size, :], stats=stats_pool.next()[0:q.size, :], max_col=0,
                        steps_left=-(-(q.end if CAUSAL else seq) // kv_tile)))  # causal: key tiles up to its last row
            for kv in _tiles(block.end if CAUSAL else seq, kv_tile):  # causal: none after the block's last query
                cols = min(kv_tile, seq - kv.begin)
                kt = k_pool.next()[:, 0:cols]
                nisa.dma_copy(dst=kt, src=k_t[g * d:(g + 1) * d, kv.begin:kv.begin + cols])
                vt = v_pool.next()
                for c in range(-(-cols // P)):
                    crows = min(P, cols - c * P)
                    row0 = g * seq + kv.begin + c * P
                    nisa.dma_copy(dst=vt[0:crows, c * d:(c + 1) * d], src=v[row0:row0 + crows, :])
                for t in block_tiles:
                    if CAUSAL and kv.begin > t.q0 + t.rows - 1:
                        continue  # fully masked for this query tile
                    pipeline.issue(_Record(tile=t, k0=kv.begin, cols=cols, first=kv.index == 0, k_t=kt, v=vt))
    pipeline.drain()
    return out
