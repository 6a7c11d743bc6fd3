BANK_COLUMNS = 512   # fp32 scores per partition in one 2 KiB PSUM bank
KEY_BLOCK = 128      # keys per P^T block and per P . V matmul
BLOCKS_PER_BANK = 4  # transposed [128, 128] blocks of P in one PSUM bank
PV_TILES_PER_BANK = 4  # [128, d <= 128] fp32 P . V tiles in one PSUM bank


@nki.jit
def tuned_kernel(q_t, k_t, v):
    """Causal flash attention with grouped-query heads. Layout: q_t [q_heads * d, seq], k_t [kv_heads * d, seq],
    v [kv_heads * seq, d], out [q_heads * seq, d].

    The structure of hand-written NKI attention: key tiles of KV_TILE keys whose scores span KV_TILE / 512 PSUM
    banks (row max read per bank), steps trimmed to whole 128-key blocks up to the diagonal, a block of Q_TILES
    query tiles per head of the group kept in SBUF while K and V stream through once per block, P^T per 128 keys
    by transposing DMAs (the last DMA_TRANSPOSE quarters of each step's blocks) or on the tensor engine (evacuated by the scalar
    engine when EVACUATE_ON_SCALAR), the small per-row updates on GpSimd when STATS_ON_GPSIMD, PIPELINE_DEPTH
    steps in flight (_StepPipeline)."""
    d = v.shape[1]
    seq = q_t.shape[1]
    q_heads, kv_heads = q_t.shape[0] // d, k_t.shape[0] // d
    group = q_heads // kv_heads
    out = nl.ndarray((q_heads * seq, d), dtype=DTYPE, buffer=nl.shared_hbm)
    q_tile, kv_tile = P, KV_TILE
    block_rows = q_tile * Q_TILES
    banks = -(-kv_tile // BANK_COLUMNS)
    key_blocks = -(-kv_tile // KEY_BLOCK)
    tiles_per_block = -(-min(block_rows, seq) // q_tile) * group
    lookahead = max(PIPELINE_DEPTH, 1) - 1
    depth = lookahead + 1
    pe_transposes = DMA_TRANSPOSE < BLOCKS_PER_BANK
    # NKI 0.6 runs tensor_scalar on GpSimd for rsqrt only: with STATS_ON_GPSIMD the statistics' tensor_scalar
    # instructions are left to the compiler's choice of engine (autotune measured them on GpSimd).
    stats_engine = nisa.engine.unknown if STATS_ON_GPSIMD else nisa.engine.vector
    scale = 1.0 / d ** 0.5

    # Score matmuls on PE_ROW_TILES row tiles of the PE array side by side (bank b's on tile b % PE_ROW_TILES):
    # Q^T in every tile's partitions, bank b's K^T in tile b % PE_ROW_TILES's.
    tile_rows = P // PE_ROW_TILES
    qk_rows = (PE_ROW_TILES - 1) * tile_rows + d
    k_cols = kv_tile if PE_ROW_TILES == 1 else -(-banks // PE_ROW_TILES) * BANK_COLUMNS
    k_pool = _Pool(depth + 1, (qk_rows, k_cols), DTYPE)
    v_pool = _Pool(depth + 1, (KEY_BLOCK, key_blocks * d), DTYPE)
    q_pool = _Pool(2 * group, (qk_rows, block_rows), DTYPE)

    def bank_matmul(dst, q_tile_t, k_tile_t, b):
        """Bank b's scores, on its PE row tile when the matmuls are tiled."""
        r0, c0 = b.index % PE_ROW_TILES * tile_rows, b.index // PE_ROW_TILES * BANK_COLUMNS
        stationary, moving = q_tile_t[r0:r0 + d, :], k_tile_t[r0:r0 + d, c0:c0 + b.size]
        if PE_ROW_TILES == 1:
            nisa.nc_matmul(dst=dst, stationary=stationary, moving=moving, accumulate=False)
        else:
            nisa.nc_matmul(dst=dst, stationary=stationary, moving=moving, accumulate=False, tile_position=(r0, 0),
                           tile_size=(tile_rows, P))
    acc_pool = _Pool((lookahead + 2) * tiles_per_block, (q_tile, d), nl.float32)
    stats_pool = _Pool((lookahead + 2) * tiles_per_block, (q_tile, 3), nl.float32)  # max, next max, sum
    p_pool = _Pool(depth + 1, (q_tile, kv_tile), DTYPE)
    pt_pool = _Pool(depth + 1, (KEY_BLOCK, key_blocks * q_tile), DTYPE)
    scores_pool = _Pool(depth + 1, (q_tile, kv_tile), nl.float32)
    bank_max_pool = _Pool(depth + 1, (q_tile, banks), nl.float32)
    alpha_pool = _Pool(depth + 1, (q_tile, 1), nl.float32)
    col_pool = _Pool(8, (q_tile, 1), nl.float32)
    out_pool = _Pool(2, (q_tile, d), DTYPE)
    # PSUM, 8 banks of 2 KiB: one holds four rotating P V tiles; P^T blocks take two when the tensor engine
    # transposes; the others rotate score banks.
    pv_bank = _Pool(1, (q_tile, PV_TILES_PER_BANK * d), nl.float32, buffer=nl.psum).next()
    pv_next = [0]
    pt_psum = _Pool(2, (KEY_BLOCK, BLOCKS_PER_BANK * q_tile), DTYPE, buffer=nl.psum) if pe_transposes else None
    s_psum = _Pool(5 if pe_transposes else 7, (q_tile, BANK_COLUMNS), nl.float32, buffer=nl.psum)

    def scores_and_max(s):
        """Scores bank by bank, out of PSUM at once with each bank's row max (banks crossing the diagonal are
        masked first); the new running max."""
        t, rows = s.tile, s.tile.rows
        bank_max = bank_max_pool.next()[0:rows, 0:-(-s.cols // BANK_COLUMNS)]
        s.scores = scores_pool.next()[0:rows, 0:s.cols]
        for b in _tiles(s.cols, BANK_COLUMNS):
            s_ps = s_psum.next()[0:rows, 0:b.size]
            bank_matmul(s_ps, t.q_t, s.k_t, b)
            scores = s.scores[:, b.begin:b.end]
            key0 = s.k0 + b.begin
            if CAUSAL and key0 + b.size - 1 > t.q0:
                nisa.tensor_copy(dst=scores, src=s_ps)
                _causal_mask(scores, scores, t.q0, key0)
                nisa.tensor_reduce(dst=bank_max[:, b.index:b.index + 1], op=nl.maximum, data=scores, axis=(1,), keepdims=True)
            else:
                nisa.tensor_scalar_reduce(dst=scores, data=s_ps, op0=nl.multiply, operand0=1.0, reduce_op=nl.maximum, reduce_res=bank_max[:, b.index:b.index + 1])
        m_old = t.stats[:, t.max_col:t.max_col + 1]
        m_new = t.stats[:, 1 - t.max_col:2 - t.max_col]
        if s.first:
            nisa.tensor_reduce(dst=m_new, op=nl.maximum, data=bank_max, axis=(1,), keepdims=True)
        else:
            tile_max = col_pool.next()[0:rows, :]
            nisa.tensor_reduce(dst=tile_max, op=nl.maximum, data=bank_max, axis=(1,), keepdims=True)
            nisa.tensor_tensor(dst=m_new, data1=m_old, data2=tile_max, op=nl.maximum)
        s.neg_scaled_max = col_pool.next()[0:rows, :]
        nisa.tensor_scalar(dst=s.neg_scaled_max, data=m_new, op0=nl.multiply, operand0=-scale, engine=stats_engine)

    def probabilities(s):
        """P over the whole step in one activation with its row sum; alpha and the running sum."""
        t, rows = s.tile, s.tile.rows
        s.probs = p_pool.next()[0:rows, 0:s.cols]
        l = t.stats[:, 2:3]
        row_sum = l if s.first else col_pool.next()[0:rows, :]
        nisa.activation_reduce(dst=s.probs, op=nl.exp, data=s.scores, bias=s.neg_scaled_max, scale=scale, reduce_op=nl.add, reduce_res=row_sum)
        if not s.first:
            m_old = t.stats[:, t.max_col:t.max_col + 1]
            s.alpha = alpha_pool.next()[0:rows, :]
            nisa.activation(dst=s.alpha, op=nl.exp, data=m_old, bias=s.neg_scaled_max, scale=scale)
            nisa.tensor_scalar(dst=l, data=l, op0=nl.multiply, operand0=s.alpha, op1=nl.add, operand1=row_sum, engine=stats_engine)
        t.max_col = 1 - t.max_col

    def evacuate(dst, src):
        """P^T blocks out of PSUM, on the scalar engine when EVACUATE_ON_SCALAR, else the vector engine."""
        if EVACUATE_ON_SCALAR:
            nisa.activation(dst=dst, op=nl.copy, data=src)
        else:
            nisa.tensor_copy(dst=dst, src=src)

    def transpose_probs(s):
        """P^T per 128 keys: the step's last DMA_TRANSPOSE quarters of its blocks by transposing DMAs (SBUF to
        SBUF; the full blocks in one 3-d dma_transpose, [rows, n, 128] -> [128, n, rows], a ragged last block on
        its own), the others on the tensor engine, four per PSUM bank, evacuated together."""
        rows = s.tile.rows
        s.probs_t = pt_pool.next()
        blocks = -(-s.cols // KEY_BLOCK)
        on_dma = blocks * DMA_TRANSPOSE // BLOCKS_PER_BANK
        first_dma = blocks - on_dma
        full_end = blocks if s.cols % KEY_BLOCK == 0 else blocks - 1
        if full_end > first_dma:
            n = full_end - first_dma
            src = s.probs[:, first_dma * KEY_BLOCK:full_end * KEY_BLOCK].reshape((rows, n, KEY_BLOCK))
            dst = s.probs_t[:, first_dma * rows:full_end * rows].reshape((KEY_BLOCK, n, rows))
            nisa.dma_transpose(dst=dst, src=src, axes=(2, 1, 0))
        if on_dma > 0 and full_end < blocks:
            k0 = full_end * KEY_BLOCK
            nisa.dma_transpose(dst=s.probs_t[0:s.cols - k0, full_end * rows:blocks * rows], src=s.probs[:, k0:s.cols],
                               axes=(1, 0))
        for group4 in _tiles(first_dma, BLOCKS_PER_BANK):
            on_pe = group4.size
            pt_ps = pt_psum.next()
            full = 0  # leading blocks of a full 128 keys
            for j in range(on_pe):
                k0 = (group4.begin + j) * KEY_BLOCK
                krows = min(KEY_BLOCK, s.cols - k0)
                nisa.nc_transpose(dst=pt_ps[0:krows, j * rows:(j + 1) * rows], data=s.probs[:, k0:k0 + krows])
                if krows == KEY_BLOCK:
                    full = j + 1
            base = group4.begin * rows
            if full > 0:
                evacuate(s.probs_t[:, base:base + full * rows], pt_ps[:, 0:full * rows])
            if full < on_pe:
                krows = s.cols - (group4.begin + full) * KEY_BLOCK
                evacuate(s.probs_t[0:krows, base + full * rows:base + on_pe * rows],
                         pt_ps[0:krows, full * rows:on_pe * rows])

    def probs_times_v(s):
        """P V over the step's key blocks in one PSUM tile (four rotate in one bank)."""
        rows = s.tile.rows
        slot = pv_next[0] % PV_TILES_PER_BANK
        pv_next[0] += 1
        s.pv = pv_bank[0:rows, slot * d:(slot + 1) * d]
        for c in _tiles(s.cols, KEY_BLOCK):
            nisa.nc_matmul(dst=s.pv, stationary=s.probs_t[0:c.size, c.index * rows:(c.index + 1) * rows],
                           moving=s.v[0:c.size, c.index * d:(c.index + 1) * d], accumulate=c.index > 0)

    def accumulate(s):
        """acc = acc * alpha + P V in one instruction; after the tile's last step, out = acc / l."""
        t = s.tile
        if s.first:
            nisa.tensor_copy(dst=t.acc, src=s.pv)
        else:
            nisa.scalar_tensor_tensor(dst=t.acc, data=t.acc, op0=nl.multiply, operand0=s.alpha, op1=nl.add, operand1=s.pv)
        t.steps_left -= 1
        if t.steps_left > 0:
            return
        inv_sum = col_pool.next()[0:t.rows, :]
        nisa.reciprocal(dst=inv_sum, data=t.stats[:, 2:3])
        o = out_pool.next()[0:t.rows, :]
        nisa.tensor_scalar(dst=o, data=t.acc, op0=nl.multiply, operand0=inv_sum, engine=stats_engine)
        row0 = t.head * seq + t.q0
        nisa.dma_copy(dst=out[row0:row0 + t.rows, :], src=o)

    pipeline = _StepPipeline(lookahead, scores_and_max, probabilities, transpose_probs, probs_times_v, accumulate)
    for g in range(kv_heads):
        for block in _tiles(seq, block_rows):
            block_tiles = []
            for j in range(group):
                h = g * group + j
                q_block = q_pool.next()
                for j in range(PE_ROW_TILES):
                    nisa.dma_copy(dst=q_block[j * tile_rows:j * tile_rows + d, 0:block.size], src=q_t[h * d:(h + 1) * d, block.begin:block.end])
                for q in _tiles(block.size, q_tile, block.begin):
                    block_tiles.append(_Record(
                        head=h, q0=q.begin, rows=q.size, q_t=q_block[:, q.offset:q.offset + q.size],
                        acc=acc_pool.next()[0:q.size, :], stats=stats_pool.next()[0:q.size, :], max_col=0,
                        steps_left=-(-(q.end if CAUSAL else seq) // kv_tile)))
            keys_end = block.end if CAUSAL else seq  # causal: keys past the block's last query are never needed
            for kv in _tiles(keys_end, kv_tile):
                cols = min(kv.size, keys_end - kv.begin)
                if PE_ROW_TILES == 1:
                    kt = k_pool.next()[:, 0:cols]
                    nisa.dma_copy(dst=kt, src=k_t[g * d:(g + 1) * d, kv.begin:kv.begin + cols])
                else:
                    kt = k_pool.next()
                    for b in _tiles(cols, BANK_COLUMNS):
                        r0, c0 = b.index % PE_ROW_TILES * tile_rows, b.index // PE_ROW_TILES * BANK_COLUMNS
                        nisa.dma_copy(dst=kt[r0:r0 + d, c0:c0 + b.size], src=k_t[g * d:(g + 1) * d, kv.begin + b.begin:kv.begin + b.end])
                vt = v_pool.next()  # V in 128-key blocks side by side: keys on partitions, as P^T has them
                for c in _tiles(cols, KEY_BLOCK):
                    row0 = g * seq + kv.begin + c.begin
                    nisa.dma_copy(dst=vt[0:c.size, c.index * d:(c.index + 1) * d], src=v[row0:row0 + c.size, :])
                for t in block_tiles:
                    last_query = t.q0 + t.rows - 1
                    if CAUSAL and kv.begin > last_query:
                        continue  # fully masked for this query tile
                    trimmed = min(cols, -(-(last_query - kv.begin + 1) // KEY_BLOCK) * KEY_BLOCK) if CAUSAL else cols
                    pipeline.issue(_Record(tile=t, k0=kv.begin, cols=trimmed, first=kv.index == 0, k_t=kt, v=vt))
    pipeline.drain()
    return out
