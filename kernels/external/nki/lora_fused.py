@nki.jit
def tuned_kernel(x, w, a, b):
    """out[M, N] = x . w + (x . a) . b. Per block of TILES_IN_BLOCK_M row tiles: x transposed once and (x . a)^T
    computed once; per step of UNROLL_FACTOR * 512 columns, each row tile's PSUM tile accumulates x . w over all
    of K (w streamed in [P, step] K tiles through PIPELINE_DEPTH buffers), then the low-rank product (x . a) . b
    into the same PSUM tile; drained and stored per row tile and step."""
    M, K = x.shape
    N, R = w.shape[1], a.shape[1]
    out = nl.ndarray((M, N), dtype=DTYPE, buffer=nl.shared_hbm)
    block_m, step_n = P * TILES_IN_BLOCK_M, 512 * UNROLL_FACTOR
    k_tiles = len(_tiles(K, P))
    transposer = _RowTransposer(x, 4 * P, TILES_IN_BLOCK_M)
    at = _Pool(1, (P, k_tiles * R), DTYPE).next()
    xT_tiles = _Pool(1, (P, k_tiles * block_m), DTYPE)
    xa_psum = _Pool(1, (P, block_m), nl.float32, buffer=nl.psum)
    xa_tiles = _Pool(1, (P, block_m), DTYPE)
    w_tiles = _Pool(PIPELINE_DEPTH, (P, step_n), DTYPE)
    b_tiles = _Pool(2, (P, step_n), DTYPE)
    res_psum = _Pool(TILES_IN_BLOCK_M + 1, (P, step_n), nl.float32, buffer=nl.psum)
    out_tiles = _Pool(TILES_IN_BLOCK_M + 1, (P, step_n), DTYPE)
    for k in _tiles(K, P):
        nisa.dma_copy(dst=at[0:k.size, k.index * R:(k.index + 1) * R], src=a[k.begin:k.end, :])
    drains = 0
    for m in _tiles(M, block_m):
        xT = xT_tiles.next()
        transposer.transpose(m, xT, block_m)
        xa_ps = xa_psum.next()[0:R, 0:m.size]
        for k in _tiles(K, P):
            nisa.nc_matmul(dst=xa_ps, stationary=at[0:k.size, k.index * R:(k.index + 1) * R],
                           moving=xT[0:k.size, k.index * block_m:k.index * block_m + m.size], accumulate=k.index > 0)
        xaT = xa_tiles.next()[0:R, 0:m.size]
        nisa.tensor_copy(dst=xaT, src=xa_ps, engine=nisa.engine.vector)
        for n in _tiles(N, step_n):
            bt = b_tiles.next()[0:R, 0:n.size]
            nisa.dma_copy(dst=bt, src=b[:, n.begin:n.end])
            ps = [res_psum.next()[0:r.size, 0:n.size] for r in _tiles(m.size, P, m.begin)]
            for k in _tiles(K, P):
                wt = w_tiles.next()[0:k.size, 0:n.size]
                nisa.dma_copy(dst=wt, src=w[k.begin:k.end, n.begin:n.end])
                for r in _tiles(m.size, P, m.begin):
                    xcol = k.index * block_m + r.offset
                    for j in _tiles(n.size, 512):
                        nisa.nc_matmul(dst=ps[r.index][:, j.begin:j.end], stationary=xT[0:k.size, xcol:xcol + r.size],
                                       moving=wt[:, j.begin:j.end], accumulate=k.index > 0)
            # The low-rank product: one more accumulation into each row tile's PSUM tile.
            for r in _tiles(m.size, P, m.begin):
                for j in _tiles(n.size, 512):
                    nisa.nc_matmul(dst=ps[r.index][:, j.begin:j.end], stationary=xaT[:, r.offset:r.offset + r.size],
                                   moving=bt[:, j.begin:j.end], accumulate=True)
                ot = out_tiles.next()[0:r.size, 0:n.size]
                _drain_psum(ot, ps[r.index], DRAIN_ENGINE, drains)
                drains += 1
                nisa.dma_copy(dst=out[r.begin:r.end, n.begin:n.end], src=ot)
    return out
