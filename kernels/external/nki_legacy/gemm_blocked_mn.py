@nki.jit
def tuned_kernel(lhsT, rhs):
    """result[M, N] = lhsT[K, M]^T . rhs[K, N], the NKI matmul tutorial's third step: M and N blocked
    (TILES_IN_BLOCK_M x TILES_IN_BLOCK_N tiles), each block's operand columns loaded once and shared."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=DTYPE, buffer=nl.shared_hbm)
    block_m, block_n = TILE_M * TILES_IN_BLOCK_M, TILE_N * TILES_IN_BLOCK_N
    step_n = TILE_N * UNROLL_FACTOR
    k_tiles = _tiles(K, TILE_K)
    lhsT_tiles = _Pool(TILES_IN_BLOCK_M * len(k_tiles) * PIPELINE_DEPTH, (TILE_K, TILE_M), DTYPE)
    rhs_tiles = _Pool(TILES_IN_BLOCK_N * len(k_tiles) * PIPELINE_DEPTH, (TILE_K, TILE_N), DTYPE)
    psum_tiles = _Pool(2, (TILE_M, step_n), nl.float32, buffer=nl.psum)
    result_tiles = _Pool(2, (TILE_M, step_n), DTYPE)
    for m in _tiles(M, block_m):
        lhsT_block = []
        for bm in _tiles(m.size, TILE_M, m.begin):
            lhsT_block.append([])
            for k in k_tiles:
                lhsT_block[-1].append(lhsT_tiles.next()[0:k.size, 0:bm.size])
                lhsT_block[-1][-1][...] = nl.load(lhsT[k.begin:k.end, bm.begin:bm.end])
        for n in _tiles(N, block_n):
            rhs_block = []
            for bn in _tiles(n.size, TILE_N, n.begin):
                rhs_block.append([])
                for k in k_tiles:
                    rhs_block[-1].append(rhs_tiles.next()[0:k.size, 0:bn.size])
                    rhs_block[-1][-1][...] = nl.load(rhs[k.begin:k.end, bn.begin:bn.end])
            for bm in _tiles(m.size, TILE_M, m.begin):
                for step in _tiles(n.size, step_n, n.begin):
                    res_psum = psum_tiles.next()[0:bm.size, 0:step.size]
                    for k in k_tiles:
                        for j in _tiles(step.size, TILE_N, step.begin):
                            product = nisa.nc_matmul(lhsT_block[bm.index][k.index],
                                                     rhs_block[(step.offset + j.offset) // TILE_N][k.index])
                            if k.index > 0:
                                res_psum[:, j.offset:j.offset + j.size] += product
                            else:
                                res_psum[:, j.offset:j.offset + j.size] = product
                    _drain(res_psum, result_tiles, result, bm, step)
    return result
