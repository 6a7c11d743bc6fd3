@nki.jit
def tuned_kernel(x, w_up, w_down, w_gate):
    """out[M, K] = (silu(x . w_gate) * (x . w_up)) . w_down. Per block of TILES_IN_BLOCK_M row tiles: x
    transposed once; per N tile the gate and up products transposed ([N tile, block] in PSUM), silu(gate) on the
    scalar engine times up on the vector engine into h^T, kept on chip; then the down product per 512 columns,
    h^T the stationary operand, w_down streamed in [P, 512] tiles, accumulated over N in PSUM."""
    M, K = x.shape
    N = w_up.shape[1]
    out = nl.ndarray((M, K), dtype=DTYPE, buffer=nl.shared_hbm)
    block_m, group_n = P * TILES_IN_BLOCK_M, P * TILES_IN_BLOCK_N
    k_tiles, n_tiles = len(_tiles(K, P)), len(_tiles(N, P))
    transposer = _RowTransposer(x, 4 * P, TILES_IN_BLOCK_M)
    xT_tiles = _Pool(1, (P, k_tiles * block_m), DTYPE)
    gate_w = _Pool(PIPELINE_DEPTH, (P, k_tiles * group_n), DTYPE)
    up_w = _Pool(PIPELINE_DEPTH, (P, k_tiles * group_n), DTYPE)
    down_w = _Pool(PIPELINE_DEPTH * TILES_IN_BLOCK_N, (P, 512), DTYPE)
    h_tiles = _Pool(1, (P, n_tiles * block_m), DTYPE)
    work_tiles = _Pool(2, (P, block_m), nl.float32)
    out_tiles = _Pool(TILES_IN_BLOCK_M, (P, K), DTYPE)
    gate_psum = _Pool(1, (P, block_m), nl.float32, buffer=nl.psum)
    up_psum = _Pool(1, (P, block_m), nl.float32, buffer=nl.psum)
    out_psum = _Pool(TILES_IN_BLOCK_M, (P, 512), nl.float32, buffer=nl.psum)
    drains = 0
    for m in _tiles(M, block_m):
        xT = xT_tiles.next()
        transposer.transpose(m, xT, block_m)
        hT = h_tiles.next()
        for g in _tiles(N, group_n):
            wg, wu = gate_w.next(), up_w.next()
            for k in _tiles(K, P):
                col = k.index * group_n
                nisa.dma_copy(dst=wg[0:k.size, col:col + g.size], src=w_gate[k.begin:k.end, g.begin:g.end])
                nisa.dma_copy(dst=wu[0:k.size, col:col + g.size], src=w_up[k.begin:k.end, g.begin:g.end])
            for n in _tiles(g.size, P, g.begin):
                gate = gate_psum.next()[0:n.size, 0:m.size]
                up = up_psum.next()[0:n.size, 0:m.size]
                for ps, w in ((gate, wg), (up, wu)):
                    for k in _tiles(K, P):
                        wcol, xcol = k.index * group_n + n.offset, k.index * block_m
                        nisa.nc_matmul(dst=ps, stationary=w[0:k.size, wcol:wcol + n.size],
                                       moving=xT[0:k.size, xcol:xcol + m.size], accumulate=k.index > 0)
                hcol = (n.begin // P) * block_m
                work = work_tiles.next()[0:n.size, 0:m.size]
                nisa.activation(dst=work, op=nl.silu, data=gate)
                nisa.tensor_tensor(dst=hT[0:n.size, hcol:hcol + m.size], data1=work, data2=up, op=nl.multiply,
                                   engine=nisa.engine.vector)
        rows = [out_tiles.next()[0:r.size, 0:K] for r in _tiles(m.size, P, m.begin)]
        for kt in _tiles(K, 512):
            ps = [out_psum.next()[0:r.size, 0:kt.size] for r in _tiles(m.size, P, m.begin)]
            for n in _tiles(N, P):
                wd = down_w.next()[0:n.size, 0:kt.size]
                nisa.dma_copy(dst=wd, src=w_down[n.begin:n.end, kt.begin:kt.end])
                for r in _tiles(m.size, P, m.begin):
                    hcol = n.index * block_m + r.offset
                    nisa.nc_matmul(dst=ps[r.index], stationary=hT[0:n.size, hcol:hcol + r.size], moving=wd,
                                   accumulate=n.index > 0)
            for r in _tiles(m.size, P, m.begin):
                _drain_psum(rows[r.index][:, kt.begin:kt.end], ps[r.index], DRAIN_ENGINE, drains)
                drains += 1
        for r in _tiles(m.size, P, m.begin):
            nisa.dma_copy(dst=out[r.begin:r.end, :], src=rows[r.index])
    return out
