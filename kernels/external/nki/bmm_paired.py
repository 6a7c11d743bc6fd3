def _bmm_drain(dst, psum, choice, step):
    """PSUM -> SBUF on the vector engine (0), the scalar engine (1), or alternating (2)."""
    if choice == 1 or (choice == 2 and step % 2 == 1):
        nisa.activation(dst=dst, op=nl.copy, data=psum)
    else:
        nisa.tensor_copy(dst=dst, src=psum, engine=nisa.engine.vector)


@nki.jit
def tuned_kernel(lhs, rhs):
    """out[b] = lhs[b] . rhs[b] (lhs [B * M, K], rhs [B * K, N], out [B * M, N]). Per group of PE_ROW_TILES
    batches: each batch's whole rhs loaded once into its PE row tile's partitions; per M tile the group's lhs
    tiles transposed once (by the tensor engine, or by transposing DMAs when DMA_TRANSPOSE); then per step of
    UNROLL_FACTOR * 512 columns one matmul per 512 columns and batch, each batch on its row tile (nc_matmul's
    tile_position / tile_size) and the batches interleaved so that they run side by side, into one PSUM tile per
    batch drained by one instruction (DRAIN_ENGINE); STORE_FACTOR steps fill an output tile per batch, stored by
    one DMA; PIPELINE_DEPTH output tiles per batch rotate between drain and store."""
    B, M, K, N = _bmm_sizes(lhs, rhs)
    out = nl.ndarray((B * M, N), dtype=DTYPE, buffer=nl.shared_hbm)
    group = max(PE_ROW_TILES, 1)
    step_n = 512 * UNROLL_FACTOR
    staging = _BmmGroupStaging(lhs, rhs, group, DMA_TRANSPOSE != 0)
    res_psum = _Pool(2 * group, (P, step_n), nl.float32, buffer=nl.psum)
    res_tiles = _Pool(PIPELINE_DEPTH * group, (P, step_n * STORE_FACTOR), DTYPE)
    step = 0
    for bg in _tiles(B, group):
        rt = staging.load_rhs(bg)
        for m in _tiles(M, P):
            lt_all = staging.transposed_lhs(bg, m)
            for block in _tiles(N, step_n * STORE_FACTOR):
                ot = [res_tiles.next()[0:m.size, 0:block.size] for _ in range(bg.size)]
                for n in _tiles(block.size, step_n, block.begin):
                    ps = [res_psum.next()[0:m.size, 0:n.size] for _ in range(bg.size)]
                    for u in _tiles(n.size, 512):
                        for k in _tiles(K, P):
                            for j in range(bg.size):
                                r0, r1 = staging.k_rows(j, k)
                                lcol, rcol = k.index * P, k.index * N + n.begin + u.begin
                                staging.matmul(ps[j][:, u.begin:u.end], lt_all[r0:r1, lcol:lcol + m.size],
                                               rt[r0:r1, rcol:rcol + u.size], k.index > 0, j)
                    for j in range(bg.size):
                        _bmm_drain(ot[j][:, n.offset:n.offset + n.size], ps[j], DRAIN_ENGINE, step)
                        step += 1
                for j in range(bg.size):
                    row0 = (bg.begin + j) * M + m.begin
                    nisa.dma_copy(dst=out[row0:row0 + m.size, block.begin:block.end], src=ot[j])
    return out
