@nki.jit
def tuned_kernel(lhsT, rhs):
    """result[M, N] = lhsT[K, M]^T . rhs[K, N], the NKI matmul tutorial's first step: both operand tiles loaded
    inside the K loop; UNROLL_FACTOR adjacent N tiles share one PSUM tile, drain and store."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=DTYPE, buffer=nl.shared_hbm)
    step_n = TILE_N * UNROLL_FACTOR
    lhsT_tiles = _Pool(PIPELINE_DEPTH, (TILE_K, TILE_M), DTYPE)
    rhs_tiles = _Pool(PIPELINE_DEPTH, (TILE_K, step_n), DTYPE)
    psum_tiles = _Pool(2, (TILE_M, step_n), nl.float32, buffer=nl.psum)
    result_tiles = _Pool(2, (TILE_M, step_n), DTYPE)
    for m in _tiles(M, TILE_M):
        for n in _tiles(N, step_n):
            res_psum = psum_tiles.next()[0:m.size, 0:n.size]
            for k in _tiles(K, TILE_K):
                lhsT_tile = lhsT_tiles.next()[0:k.size, 0:m.size]
                rhs_tile = rhs_tiles.next()[0:k.size, 0:n.size]
                nisa.dma_copy(dst=lhsT_tile, src=lhsT[k.begin:k.end, m.begin:m.end])
                nisa.dma_copy(dst=rhs_tile, src=rhs[k.begin:k.end, n.begin:n.end])
                _matmul_step(res_psum, lhsT_tile, rhs_tile, accumulate=k.index > 0)
            _drain(res_psum, result_tiles, result, m, n)
    return result
