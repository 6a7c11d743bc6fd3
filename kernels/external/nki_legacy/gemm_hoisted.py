@nki.jit
def tuned_kernel(lhsT, rhs):
    """result[M, N] = lhsT[K, M]^T . rhs[K, N], the NKI matmul tutorial's second step: the loads hoisted out of
    the innermost loop (a column of lhsT tiles once per M tile, a column of rhs tiles once per N step)."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=DTYPE, buffer=nl.shared_hbm)
    step_n = TILE_N * UNROLL_FACTOR
    k_tiles = _tiles(K, TILE_K)
    lhsT_tiles = _Pool(len(k_tiles) * PIPELINE_DEPTH, (TILE_K, TILE_M), DTYPE)
    rhs_tiles = _Pool(len(k_tiles) * PIPELINE_DEPTH, (TILE_K, step_n), DTYPE)
    psum_tiles = _Pool(2, (TILE_M, step_n), nl.float32, buffer=nl.psum)
    result_tiles = _Pool(2, (TILE_M, step_n), DTYPE)
    for m in _tiles(M, TILE_M):
        lhsT_column = []
        for k in k_tiles:
            lhsT_column.append(lhsT_tiles.next()[0:k.size, 0:m.size])
            lhsT_column[-1][...] = nl.load(lhsT[k.begin:k.end, m.begin:m.end])
        for n in _tiles(N, step_n):
            rhs_column = []
            for k in k_tiles:
                rhs_column.append(rhs_tiles.next()[0:k.size, 0:n.size])
                rhs_column[-1][...] = nl.load(rhs[k.begin:k.end, n.begin:n.end])
            res_psum = psum_tiles.next()[0:m.size, 0:n.size]
            for k in k_tiles:
                _matmul_step(res_psum, lhsT_column[k.index], rhs_column[k.index], accumulate=k.index > 0)
            _drain(res_psum, result_tiles, result, m, n)
    return result
