def _norm_matmul(x, w, z, g):
    """out = (x / sqrt(mean(x^2) + NORM_EPSILON)) . w, or with z and g: a = x + z and
    out = (a / sqrt(mean(a^2) + NORM_EPSILON) * g) . w. w stays in SBUF (g folded into its rows); per row tile the sum
    of squares in one activation, 1/rms in another, the rows transposed four to a PSUM bank, PIPELINE_DEPTH - 1 row
    tiles ahead of the matmuls; each step of UNROLL_FACTOR banks drained scaled by 1/rms (the per-row scale
    commutes with the product)."""
    M, K = x.shape
    N = w.shape[1]
    out = nl.ndarray((M, N), dtype=DTYPE, buffer=nl.shared_hbm)
    k_tiles = len(_tiles(K, P))
    step_n = BANK * UNROLL_FACTOR
    g_columns = None
    if g is not None:  # g[k] onto partition k of each K tile: g^T . 1 on the tensor engine
        g_row = _Pool(1, (1, K), DTYPE).next()
        nisa.dma_copy(dst=g_row, src=g)
        one = _Pool(1, (1, 1), DTYPE).next()
        nisa.memset(dst=one, value=1.0)
        g_psum = _Pool(1, (P, k_tiles), nl.float32, buffer=nl.psum).next()
        g_columns = _Pool(1, (P, k_tiles), nl.float32).next()
        for k in _tiles(K, P):
            nisa.nc_matmul(dst=g_psum[0:k.size, k.index:k.index + 1], stationary=g_row[:, k.begin:k.end], moving=one,
                           accumulate=False)
        full = K // P  # columns of P partitions; a ragged last one on fewer
        if full:
            nisa.tensor_copy(dst=g_columns[:, 0:full], src=g_psum[:, 0:full])
        if full < k_tiles:
            nisa.tensor_copy(dst=g_columns[0:K - full * P, full:k_tiles], src=g_psum[0:K - full * P, full:k_tiles])
    depth = PIPELINE_DEPTH
    x_rows = _Pool(2, (P, K), DTYPE)
    z_rows = _Pool(2, (P, K), DTYPE)
    squares = _Pool(1, (P, K), nl.float32)  # discarded: only the row sums are kept
    sums = _Pool(2, (P, 1), nl.float32)
    inv_rms = _Pool(depth + 1, (P, 1), nl.float32)
    xT_tiles = _Pool(depth, (P, k_tiles * P), DTYPE)
    transpose_banks = _Pool(2, (P, BANK), DTYPE, buffer=nl.psum)  # a transpose keeps the dtype
    out_psum = _Pool(2, (P, step_n), nl.float32, buffer=nl.psum)
    out_rows = _Pool(2, (P, N), DTYPE)
    epsilon = None
    if NORM_EPSILON:
        epsilon = _Pool(1, (P, 1), nl.float32).next()  # the bias as a column: NeuronCore v2 takes no constant bias
        nisa.memset(dst=epsilon, value=NORM_EPSILON)
    row_tiles = _tiles(M, P)
    rows_of, inv_of, xT_of = {}, {}, {}
    w_resident = None
    step_count = 0
    # Row tile j's phases: prepare one row tile ahead of its transposes, which run depth - 1 row tiles ahead of its
    # matmuls (iteration j: prepare j + 1, transpose j, matmuls j - depth + 1).
    for i in range(-1, len(row_tiles) + depth - 1):
        if i + 1 < len(row_tiles):  # prepare: x (+ z), the sum of squares, 1/rms
            m = row_tiles[i + 1]
            xt = x_rows.next()[0:m.size, :]
            nisa.dma_copy(dst=xt, src=x[m.begin:m.end, :])
            if z is not None:
                zt = z_rows.next()[0:m.size, :]
                nisa.dma_copy(dst=zt, src=z[m.begin:m.end, :])
                nisa.tensor_tensor(dst=xt, data1=xt, data2=zt, op=nl.add)
            total = sums.next()[0:m.size, :]
            nisa.activation_reduce(dst=squares.next()[0:m.size, :], op=nl.square, data=xt, reduce_op=nl.add,
                                   reduce_res=total)
            inv = inv_rms.next()[0:m.size, :]
            nisa.activation(dst=inv, op=nl.rsqrt, data=total, bias=None if epsilon is None else epsilon[0:m.size, :],
                            scale=1.0 / K)
            rows_of[m.index], inv_of[m.index] = xt, inv
        if 0 <= i < len(row_tiles):  # transpose
            m = row_tiles[i]
            xT_of[m.index] = xT_tiles.next()
            _transpose_rows(xT_of[m.index], rows_of[m.index], m.size, 0, K, transpose_banks)
        if 0 <= i - depth + 1 < len(row_tiles):  # the matmuls, drained scaled by 1/rms, and the store
            m = row_tiles[i - depth + 1]
            if w_resident is None:  # before the first matmuls, behind the first row tiles' loads
                w_resident = _load_resident(w)
                if g_columns is not None:
                    for k in _tiles(K, P):  # (a * g) . w = a . (diag(g) w)
                        rows = w_resident[0:k.size, k.index * N:(k.index + 1) * N]
                        nisa.tensor_scalar(dst=rows, data=rows, op0=nl.multiply,
                                           operand0=g_columns[0:k.size, k.index:k.index + 1], engine=nisa.engine.scalar)
            ot = out_rows.next()[0:m.size, :]
            for step in _tiles(N, step_n):
                ps = out_psum.next()[0:m.size, 0:step.size]
                _row_tile_matmuls(ps, xT_of[m.index], w_resident, m.size, K, N, step)
                on_scalar = DRAIN_ENGINE == 1 or (DRAIN_ENGINE == 2 and step_count % 2 == 1)
                step_count += 1
                nisa.tensor_scalar(dst=ot[:, step.begin:step.end], data=ps, op0=nl.multiply, operand0=inv_of[m.index],
                                   engine=nisa.engine.scalar if on_scalar else nisa.engine.vector)
            nisa.dma_copy(dst=out[m.begin:m.end, :], src=ot)
    return out
