GROUP = 128           # query rows per group
K_TILE = 512          # keys per score tile: one PSUM bank of fp32
V_TILE = 128          # keys per V tile and per P . V matmul
SCORE_BANKS = 4       # PSUM banks the score tiles rotate over
PV_BANKS = 4          # PSUM banks the P . V accumulations rotate over
MASK_SCRATCH = 2      # slots of the diagonal tiles' copy and masked copy
SECTION_THRESHOLD = 10 * 1024  # above this many keys, K and V are processed in sections
SECTION_LEN = 8 * 1024         # keys per section


@nki.jit
def tuned_kernel(q_t, k_t, v):
    """Causal attention with grouped-query heads in the structure of the NKI library's context-encoding kernel
    (attention_cte, called without a launch grid). Layout: q_t [q_heads * d, seq], k_t [kv_heads * d, seq],
    v [kv_heads * seq, d], out [q_heads * seq, d].

    Heads one after another, K and V of a head loaded again for each query head; K^T and V of the head whole in
    SBUF (above SECTION_THRESHOLD keys, SECTION_LEN keys at a time, the unnormalised output of earlier sections
    written to `out` and merged on the way back); 128-row query groups, Q^T loaded Q_GRPS_PER_LOAD groups at a
    time; per 512-key tile the scores leave PSUM scaled, with their row max (tiles at or after the diagonal
    masked first); exp with its row sum per 512 keys; P^T by transposing DMAs, one per 512 keys; P V per 128
    keys accumulated in PSUM per KV_TILE keys; groups software-pipelined (Q and scores two groups ahead, exp one
    ahead), every per-group buffer rotating over PIPELINE_DEPTH slots."""
    d = v.shape[1]
    seq = q_t.shape[1]
    q_heads, kv_heads = q_t.shape[0] // d, k_t.shape[0] // d
    group = q_heads // kv_heads
    out = nl.ndarray((q_heads * seq, d), dtype=DTYPE, buffer=nl.shared_hbm)
    scale = 1.0 / d ** 0.5
    depth = max(PIPELINE_DEPTH, 1)
    num_grps = -(-seq // GROUP)
    q_per_load = min(max(Q_GRPS_PER_LOAD, 1), num_grps)
    sectioned = seq > SECTION_THRESHOLD
    section_len = SECTION_LEN if sectioned else seq
    num_sections = -(-seq // section_len)
    large_tiles = -(-section_len // KV_TILE)
    k_tiles = -(-section_len // K_TILE)
    v_tiles = -(-section_len // V_TILE)
    lowest = -3.4028235e38

    running_pool = _Pool(1, (GROUP, 3 * num_grps), nl.float32)  # -max, sum, 1 / sum per group
    k_pool = _Pool(1, (d, k_tiles * K_TILE), DTYPE)
    v_pool = _Pool(1, (V_TILE, v_tiles * d), DTYPE)
    q_pool = _Pool(2, (d, q_per_load * GROUP), DTYPE)
    partial_max_pool = _Pool(depth, (GROUP, k_tiles), nl.float32)
    partial_sum_pool = _Pool(depth, (GROUP, k_tiles), nl.float32)
    stats_pool = _Pool(depth, (GROUP, 5), nl.float32)  # section max, section sum, previous max, previous sum, alpha
    scores_pool = _Pool(depth, (GROUP, large_tiles * KV_TILE), nl.float32)
    probs_pool = _Pool(1, (GROUP, large_tiles * KV_TILE), DTYPE)
    probs_t_pool = _Pool(depth, (V_TILE, large_tiles * KV_TILE), DTYPE)
    acc_pool = _Pool(depth, (GROUP, d), nl.float32)
    final_pool = _Pool(depth, (GROUP, d), nl.float32)
    prev_out_pool = _Pool(depth, (GROUP, d), nl.float32) if sectioned else None
    merged_pool = _Pool(depth, (GROUP, d), nl.float32) if sectioned else None
    diag_copy = _Pool(MASK_SCRATCH, (GROUP, K_TILE), nl.float32).buffers
    diag_masked = _Pool(MASK_SCRATCH, (GROUP, K_TILE), nl.float32).buffers
    s_psum = _Pool(SCORE_BANKS, (GROUP, K_TILE), nl.float32, buffer=nl.psum).buffers
    pv_psum = _Pool(PV_BANKS, (GROUP, d), nl.float32, buffer=nl.psum).buffers
    SECTION_MAX, SECTION_SUM, PREV_MAX, PREV_SUM, CORRECTION = range(5)

    def take(pool):
        return [pool.next() for _ in pool.buffers] if pool is not None else []

    def has_compute(gi, k_start, grps=1):
        """Causal: group gi has work for keys from k_start on when its last possible row reaches k_start."""
        return not CAUSAL or gi * GROUP + grps * GROUP - 1 >= k_start

    for h in range(q_heads):
        g = h // group
        running = running_pool.next()
        for s in range(num_sections):
            sec0 = s * section_len
            sec_end = min(seq, sec0 + section_len)
            k_sb = k_pool.next()
            for t in range(k_tiles):
                k0 = sec0 + t * K_TILE
                if k0 >= sec_end:
                    break
                n = min(K_TILE, sec_end - k0)
                nisa.dma_copy(dst=k_sb[:, t * K_TILE:t * K_TILE + n], src=k_t[g * d:(g + 1) * d, k0:k0 + n])
            v_sb = v_pool.next()
            for t in range(v_tiles):
                k0 = sec0 + t * V_TILE
                if k0 >= sec_end:
                    break
                n = min(V_TILE, sec_end - k0)
                nisa.dma_copy(dst=v_sb[0:n, t * d:(t + 1) * d], src=v[g * seq + k0:g * seq + k0 + n, :])
            q_sb, partial_max, partial_sum = take(q_pool), take(partial_max_pool), take(partial_sum_pool)
            stats, scores, probs = take(stats_pool), take(scores_pool), probs_pool.next()
            probs_t, acc, finals = take(probs_t_pool), take(acc_pool), take(final_pool)
            prev_out, merged = take(prev_out_pool), take(merged_pool)

            def rows_of(gi):
                return min(GROUP, seq - gi * GROUP)

            def slot(slots, gi):
                return slots[gi % len(slots)]

            def stat(gi, col):
                return slot(stats, gi)[0:rows_of(gi), col:col + 1]

            def running_max(gi):
                return running[0:rows_of(gi), gi:gi + 1]

            def running_sum(gi):
                return running[0:rows_of(gi), num_grps + gi:num_grps + gi + 1]

            def sum_recip(gi):
                return running[0:rows_of(gi), 2 * num_grps + gi:2 * num_grps + gi + 1]

            def load_q(gi):
                if gi % q_per_load != 0 or not has_compute(gi, sec0, q_per_load):
                    return
                q0 = gi * GROUP
                cols = min(seq - q0, q_per_load * GROUP)
                nisa.dma_copy(dst=q_sb[(gi // q_per_load) % 2][:, 0:cols], src=q_t[h * d:(h + 1) * d, q0:q0 + cols])

            def qk_large(gi, L):
                """Scores of group gi against the 512-key tiles of large tile L, out of PSUM scaled with their
                row max; tiles at or after the diagonal copied and masked first."""
                q0, rows = gi * GROUP, rows_of(gi)
                col = (gi % q_per_load) * GROUP
                q_tile = q_sb[(gi // q_per_load) % 2][:, col:col + rows]
                for j in range(KV_TILE // K_TILE):
                    t = L * (KV_TILE // K_TILE) + j
                    k0 = sec0 + t * K_TILE
                    if t >= k_tiles or k0 >= sec_end or not has_compute(gi, k0):
                        continue
                    n = min(K_TILE, sec_end - k0)
                    ps = s_psum[t % SCORE_BANKS][0:rows, 0:n]
                    nisa.nc_matmul(dst=ps, stationary=q_tile, moving=k_sb[:, t * K_TILE:t * K_TILE + n], accumulate=False)
                    dst = slot(scores, gi)[0:rows, t * K_TILE:t * K_TILE + n]
                    tile_max = slot(partial_max, gi)[0:rows, t:t + 1]
                    if CAUSAL and q0 < k0 + K_TILE:
                        copy = diag_copy[t % MASK_SCRATCH][0:rows, 0:n]
                        masked = diag_masked[t % MASK_SCRATCH][0:rows, 0:n]
                        nisa.tensor_copy(dst=copy, src=ps)
                        _causal_mask(masked, copy, q0, k0)
                        nisa.tensor_scalar_reduce(dst=dst, data=masked, op0=nl.multiply, operand0=scale, reduce_op=nl.maximum, reduce_res=tile_max)
                    else:
                        nisa.tensor_scalar_reduce(dst=dst, data=ps, op0=nl.multiply, operand0=scale, reduce_op=nl.maximum, reduce_res=tile_max)

            def qk_and_max(gi):
                if not has_compute(gi, sec0):
                    return
                nisa.memset(dst=slot(partial_max, gi)[0:rows_of(gi), :], value=lowest)
                for L in range(large_tiles):
                    qk_large(gi, L)

            def update_max(gi):
                """The negated row max of the section; across sections the running max and the correction
                exp(m_old - m_new) of the earlier sections."""
                if not has_compute(gi, sec0):
                    return
                section_max = stat(gi, SECTION_MAX)
                nisa.tensor_reduce(dst=section_max, op=nl.maximum, data=slot(partial_max, gi)[0:rows_of(gi), :], axis=(1,), keepdims=True)
                if not sectioned or s == 0:
                    nisa.tensor_scalar(dst=running_max(gi), data=section_max, op0=nl.multiply, operand0=-1.0)
                    return
                prev_max = stat(gi, PREV_MAX)
                nisa.activation(dst=prev_max, op=nl.copy, data=running_max(gi), scale=-1.0)
                nisa.scalar_tensor_tensor(dst=running_max(gi), data=section_max, op0=nl.multiply, operand0=-1.0, op1=nl.minimum, operand1=running_max(gi))
                nisa.activation(dst=stat(gi, CORRECTION), op=nl.exp, data=prev_max, bias=running_max(gi))

            def exp_probs(gi):
                """P per 512-key tile with its row sum, then P^T 128 keys at a time by transposing DMAs."""
                if not has_compute(gi, sec0):
                    return
                rows = rows_of(gi)
                nisa.memset(dst=slot(partial_sum, gi)[0:rows, :], value=0.0)
                for t in range(k_tiles):
                    k0 = sec0 + t * K_TILE
                    if k0 >= sec_end or not has_compute(gi, k0):
                        continue
                    n, c0 = min(K_TILE, sec_end - k0), t * K_TILE
                    p = probs[0:rows, c0:c0 + n]
                    nisa.activation_reduce(dst=p, op=nl.exp, data=slot(scores, gi)[0:rows, c0:c0 + n], bias=running_max(gi), reduce_op=nl.add, reduce_res=slot(partial_sum, gi)[0:rows, t:t + 1])
                    # The tile's whole 128-key blocks in one transposing DMA (a 3-d transpose: block b lands
                    # in columns c0 + b * rows), a ragged last block in another.
                    full, rest = n // V_TILE, n % V_TILE
                    pt = slot(probs_t, gi)
                    if full:
                        blocks = probs[0:rows, c0:c0 + full * V_TILE].reshape((rows, full, V_TILE))
                        nisa.dma_transpose(dst=pt[:, c0:c0 + full * rows].reshape((V_TILE, full, rows)), src=blocks,
                                           axes=(2, 1, 0))
                    if rest:
                        nisa.dma_transpose(dst=pt[0:rest, c0 + full * rows:c0 + (full + 1) * rows], src=probs[0:rows, c0 + full * V_TILE:c0 + n], axes=(1, 0))

            def pv_large(gi, L):
                """P V of group gi over the 128-key blocks of large tile L in one PSUM bank, into SBUF."""
                rows = rows_of(gi)
                ps = pv_psum[L % PV_BANKS][0:rows, 0:d]
                started = False
                for j in range(KV_TILE // V_TILE):
                    vi = L * (KV_TILE // V_TILE) + j
                    k0 = sec0 + vi * V_TILE
                    if vi >= v_tiles or k0 >= sec_end or not has_compute(gi, k0):
                        continue
                    n = min(V_TILE, sec_end - k0)
                    col = vi // (K_TILE // V_TILE) * K_TILE + vi % (K_TILE // V_TILE) * rows  # block vi of P^T
                    nisa.nc_matmul(dst=ps, stationary=slot(probs_t, gi)[0:n, col:col + rows],
                                   moving=v_sb[0:n, vi * d:(vi + 1) * d], accumulate=started)
                    started = True
                if not started:
                    return
                a = slot(acc, gi)[0:rows, :]
                if L == 0:
                    nisa.tensor_copy(dst=a, src=ps)
                else:
                    nisa.tensor_tensor(dst=a, data1=a, data2=ps, op=nl.add)

            def pv(gi):
                if not has_compute(gi, sec0):
                    return
                nisa.memset(dst=slot(acc, gi)[0:rows_of(gi), :], value=0.0)
                for L in range(large_tiles):
                    pv_large(gi, L)

            def fused_qk_and_pv(gi):
                """P V of group gi interleaved, per large tile, with the scores of group gi + 2."""
                qk = gi + 2
                do_pv, do_qk = has_compute(gi, sec0), has_compute(qk, sec0)
                if do_qk:
                    nisa.memset(dst=slot(partial_max, qk)[0:rows_of(qk), :], value=lowest)
                for L in range(large_tiles):
                    if do_pv:
                        pv_large(gi, L)
                    if do_qk:
                        qk_large(qk, L)

            def scale_and_store(src, gi, out_rows):
                o = slot(finals, gi)[0:rows_of(gi), :]
                nisa.tensor_scalar(dst=o, data=src, op0=nl.multiply, operand0=sum_recip(gi), engine=nisa.engine.scalar)
                nisa.dma_copy(dst=out_rows, src=o)

            def write_back(gi):
                """The row sums and their reciprocal, the output (across sections merged with the earlier
                sections' output read back from HBM)."""
                if not has_compute(gi, sec0):
                    return
                rows, row0 = rows_of(gi), h * seq + gi * GROUP
                last = s == num_sections - 1 or not has_compute(gi, sec0 + section_len)
                out_rows = out[row0:row0 + rows, :]
                section_sum = stat(gi, SECTION_SUM)
                a = slot(acc, gi)[0:rows, :]
                nisa.tensor_reduce(dst=section_sum, op=nl.add, data=slot(partial_sum, gi)[0:rows, :], axis=(1,), keepdims=True)
                if not sectioned:
                    nisa.reciprocal(dst=sum_recip(gi), data=section_sum)
                    scale_and_store(a, gi, out_rows)
                    return
                if s == 0:
                    nisa.tensor_copy(dst=running_sum(gi), src=section_sum)
                else:
                    prev_sum = stat(gi, PREV_SUM)
                    nisa.tensor_copy(dst=prev_sum, src=running_sum(gi))
                    nisa.tensor_scalar(dst=running_sum(gi), data=prev_sum, op0=nl.multiply, operand0=stat(gi, CORRECTION), op1=nl.add, operand1=section_sum)
                if last:
                    nisa.reciprocal(dst=sum_recip(gi), data=running_sum(gi))
                result = a
                if s > 0:
                    prev = slot(prev_out, gi)[0:rows, :]
                    nisa.dma_copy(dst=prev, src=out_rows)
                    result = slot(merged, gi)[0:rows, :]
                    nisa.scalar_tensor_tensor(dst=result, data=prev, op0=nl.multiply, operand0=stat(gi, CORRECTION), op1=nl.add, operand1=a)
                if last:
                    scale_and_store(result, gi, out_rows)
                else:
                    nisa.dma_copy(dst=out_rows, src=result)  # unnormalised, read back by the next section

            if num_grps <= 1:
                load_q(0), qk_and_max(0), update_max(0), exp_probs(0), pv(0), write_back(0)
                continue
            load_q(0), qk_and_max(0), update_max(0), exp_probs(0)
            load_q(1), qk_and_max(1), update_max(1)
            for i in range(num_grps - 2):
                load_q(i + 2)
                exp_probs(i + 1)
                fused_qk_and_pv(i)
                write_back(i)
                update_max(i + 2)
            pv(num_grps - 2), write_back(num_grps - 2)
            exp_probs(num_grps - 1), pv(num_grps - 1), write_back(num_grps - 1)
    return out
