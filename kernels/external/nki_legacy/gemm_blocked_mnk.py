@nki.jit
def tuned_kernel(lhsT, rhs):
    """result[M, N] = lhsT[K, M]^T . rhs[K, N], the NKI matmul tutorial's fourth step: M, N and K blocked,
    large operand transfers ([TILE_K, block] per DMA), partial sums of each N block kept in SBUF."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=DTYPE, buffer=nl.shared_hbm)
    block_m, block_n, block_k = TILE_M * TILES_IN_BLOCK_M, TILE_N * TILES_IN_BLOCK_N, TILE_K * TILES_IN_BLOCK_K
    step_n = TILE_N * UNROLL_FACTOR
    m_tiles = _tiles(M, TILE_M)
    partial_rows = _Pool(len(m_tiles), (TILE_M, block_n), DTYPE)
    rhs_tiles = _Pool(TILES_IN_BLOCK_K * PIPELINE_DEPTH, (TILE_K, block_n), DTYPE)
    lhsT_tiles = _Pool(TILES_IN_BLOCK_K * PIPELINE_DEPTH, (TILE_K, block_m), DTYPE)
    psum_tiles = _Pool(2, (TILE_M, step_n), nl.float32, buffer=nl.psum)
    for n in _tiles(N, block_n):
        partial = []  # by M tile
        for m in m_tiles:
            partial.append(partial_rows.next()[0:m.size, 0:n.size])
            partial[-1][...] = nisa.memset(shape=(m.size, n.size), value=0.0, dtype=DTYPE, engine=nisa.gpsimd_engine)
        for k in _tiles(K, block_k):
            rhs_block = []  # by K tile: [TILE_K, block_n]
            for bk in _tiles(k.size, TILE_K, k.begin):
                rhs_block.append(rhs_tiles.next()[0:bk.size, 0:n.size])
                rhs_block[-1][...] = nl.load(rhs[bk.begin:bk.end, n.begin:n.end])
            for m in _tiles(M, block_m):
                lhsT_block = []  # by K tile: [TILE_K, block_m]
                for bk in _tiles(k.size, TILE_K, k.begin):
                    lhsT_block.append(lhsT_tiles.next()[0:bk.size, 0:m.size])
                    lhsT_block[-1][...] = nl.load(lhsT[bk.begin:bk.end, m.begin:m.end])
                for step in _tiles(n.size, step_n, n.begin):
                    for bm in _tiles(m.size, TILE_M, m.begin):
                        res_psum = psum_tiles.next()[0:bm.size, 0:step.size]
                        for bk in _tiles(k.size, TILE_K, k.begin):
                            stationary = lhsT_block[bk.index][:, bm.offset:bm.offset + bm.size]
                            moving = rhs_block[bk.index][:, step.offset:step.offset + step.size]
                            _matmul_step(res_psum, stationary, moving, accumulate=bk.index > 0)
                        total = partial[bm.begin // TILE_M][:, step.offset:step.offset + step.size]
                        total[...] = nisa.tensor_tensor(total, res_psum, op=nl.add)
        for m in m_tiles:
            nl.store(result[m.begin:m.end, n.begin:n.end], value=partial[m.index])
    return result
