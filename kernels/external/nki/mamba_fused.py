@nki.jit
def tuned_kernel(delta, u, a, b, c):
    """out[ch, m] = sum over s of c[s, m] * h[ch, s, m], h = scan(exp(delta * a[:, s]), delta * u * b[s]), in
    chunks of TILE_SIZE steps with the channel tiles inner: delta, u and delta * u once per chunk for every
    state; b[s] and c[s] broadcast once per chunk and state on the tensor engine (ones[s]^T . row[s]) and read
    from PSUM (BCAST_IN_PSUM 1) or drained to SBUF by the scalar engine; the scan started from the previous
    chunk's last state; the products on the engine PRODUCT_ENGINE names (0 vector, 1 GpSimd, 2 alternating by
    state), the sum over states on ACC_ENGINE's (0 vector, 1 GpSimd, 2 identity matmuls accumulating in PSUM);
    PIPELINE_DEPTH rotating buffers per stream."""
    channels, steps = delta.shape
    states = a.shape[1]
    out = nl.ndarray((channels, steps), dtype=DTYPE, buffer=nl.shared_hbm)
    bank = 512  # float32 columns per PSUM bank
    channel_tiles = _tiles(channels, P)
    n_ct = len(channel_tiles)
    depth = PIPELINE_DEPTH
    pe_acc = ACC_ENGINE == 2
    a_pool = _Pool(n_ct, (P, states), nl.float32)
    carry_pool = _Pool(n_ct, (P, states), nl.float32)
    a_cols, carry = [], []
    for ct in channel_tiles:
        a_cols.append(a_pool.next()[0:ct.size, :])
        nisa.dma_copy(dst=a_cols[-1], src=a[ct.begin:ct.end, :])
        carry.append(carry_pool.next()[0:ct.size, :])
    ones = _Pool(1, (states, P), DTYPE).next()
    nisa.memset(dst=ones, value=1.0)
    identity = None
    if pe_acc:
        # identity[p, q] = 1 where p - q >= 0 and q - p >= 0.
        identity = _Pool(1, (P, P), nl.float32).next()
        nisa.memset(dst=identity, value=1.0)
        nisa.affine_select(dst=identity, pattern=[[-1, P]], channel_multiplier=1, on_true_tile=identity,
                           on_false_value=0.0, cmp_op=nl.greater_equal)
        nisa.affine_select(dst=identity, pattern=[[1, P]], channel_multiplier=-1, on_true_tile=identity,
                           on_false_value=0.0, cmp_op=nl.greater_equal)
    b_rows = _Pool(2, (states, TILE_SIZE), DTYPE)
    c_rows = _Pool(2, (states, TILE_SIZE), DTYPE)
    delta_pool = _Pool(depth * n_ct, (P, TILE_SIZE), DTYPE)
    u_pool = _Pool(depth, (P, TILE_SIZE), DTYPE)
    du_pool = _Pool(depth * n_ct, (P, TILE_SIZE), nl.float32)
    bcast_psum = _Pool(4 * len(_tiles(TILE_SIZE, bank)), (P, bank), nl.float32, buffer=nl.psum)  # two states
    b_sbuf = None if BCAST_IN_PSUM else _Pool(2, (P, TILE_SIZE), nl.float32)
    c_sbuf = None if BCAST_IN_PSUM else _Pool(2, (P, TILE_SIZE), nl.float32)
    da_pool = _Pool(depth, (P, TILE_SIZE), nl.float32)
    h_pool = _Pool(depth, (P, TILE_SIZE), nl.float32)
    acc_pool = _Pool(n_ct, (P, TILE_SIZE), nl.float32, buffer=nl.psum) if pe_acc else \
        _Pool(depth * n_ct, (P, TILE_SIZE), nl.float32)
    out_pool = _Pool(depth, (P, TILE_SIZE), DTYPE) if pe_acc else None

    def engine_for(choice, step):
        gpsimd = choice == 1 or (choice == 2 and step % 2 == 1)
        return nisa.engine.gpsimd if gpsimd else nisa.engine.vector

    step = 0
    for m in _tiles(steps, TILE_SIZE):
        b_m = b_rows.next()[:, 0:m.size]
        c_m = c_rows.next()[:, 0:m.size]
        nisa.dma_copy(dst=b_m, src=b[:, m.begin:m.end])
        nisa.dma_copy(dst=c_m, src=c[:, m.begin:m.end])
        delta_t, du_t, acc_t = [], [], []
        for ct in channel_tiles:
            delta_t.append(delta_pool.next()[0:ct.size, 0:m.size])
            nisa.dma_copy(dst=delta_t[-1], src=delta[ct.begin:ct.end, m.begin:m.end])
            u_t = u_pool.next()[0:ct.size, 0:m.size]
            nisa.dma_copy(dst=u_t, src=u[ct.begin:ct.end, m.begin:m.end])
            du_t.append(du_pool.next()[0:ct.size, 0:m.size])
            nisa.tensor_tensor(dst=du_t[-1], data1=delta_t[-1], data2=u_t, op=nl.multiply,
                               engine=engine_for(PRODUCT_ENGINE, step))
            acc_t.append(acc_pool.next()[0:ct.size, 0:m.size])

        def broadcast(s):
            """b[s] and c[s] along the partitions, a PSUM bank per piece; drained to SBUF unless BCAST_IN_PSUM."""
            pieces = ([], [])
            full = (None, None) if BCAST_IN_PSUM else (b_sbuf.next()[:, 0:m.size], c_sbuf.next()[:, 0:m.size])
            for piece in _tiles(m.size, bank):
                for which, rows in enumerate((b_m, c_m)):
                    bcast = bcast_psum.next()[:, 0:piece.size]
                    nisa.nc_matmul(dst=bcast, stationary=ones[s:s + 1, :], moving=rows[s:s + 1, piece.begin:piece.end],
                                   accumulate=False)
                    if BCAST_IN_PSUM:
                        pieces[which].append(bcast)
                    else:
                        nisa.activation(dst=full[which][:, piece.begin:piece.end], op=nl.copy, data=bcast)
            return pieces, full

        # One state ahead: the tensor engine runs in program order, so a broadcast issued after the state's
        # accumulating matmuls would wait for them.
        ahead = broadcast(0)
        for s in range(states):
            product_engine = engine_for(PRODUCT_ENGINE, step)
            acc_engine = nisa.engine.gpsimd if ACC_ENGINE == 1 else nisa.engine.vector
            step += 1
            pieces, full = ahead
            if s + 1 < states:
                ahead = broadcast(s + 1)
            for t, ct in enumerate(channel_tiles):
                rows = ct.size

                def product(dst, x, which):
                    if not BCAST_IN_PSUM:
                        nisa.tensor_tensor(dst=dst, data1=x, data2=full[which][0:rows, :], op=nl.multiply,
                                           engine=product_engine)
                        return
                    for i, p in enumerate(pieces[which]):
                        begin = i * bank
                        end = begin + p.shape[1]
                        nisa.tensor_tensor(dst=dst[:, begin:end], data1=x[:, begin:end], data2=p[0:rows, :],
                                           op=nl.multiply, engine=nisa.engine.vector)

                delta_a = da_pool.next()[0:rows, 0:m.size]
                nisa.activation(dst=delta_a, op=nl.exp, data=delta_t[t], scale=a_cols[t][:, s:s + 1])
                h = h_pool.next()[0:rows, 0:m.size]
                product(h, du_t[t], 0)
                state = carry[t][:, s:s + 1]
                nisa.tensor_tensor_scan(dst=h, data0=delta_a, data1=h, initial=0.0 if m.begin == 0 else state,
                                        op0=nl.multiply, op1=nl.add)
                if m.end < steps:
                    nisa.activation(dst=state, op=nl.copy, data=h[:, m.size - 1:m.size])
                acc = acc_t[t]
                if pe_acc:
                    product(h, h, 1)
                    for piece in _tiles(m.size, bank):
                        nisa.nc_matmul(dst=acc[:, piece.begin:piece.end], stationary=identity[0:rows, 0:rows],
                                       moving=h[:, piece.begin:piece.end], accumulate=s > 0)
                elif s == 0:
                    product(acc, h, 1)
                else:
                    product(h, h, 1)
                    nisa.tensor_tensor(dst=acc, data1=acc, data2=h, op=nl.add, engine=acc_engine)
        for t, ct in enumerate(channel_tiles):
            destination = out[ct.begin:ct.end, m.begin:m.end]
            if pe_acc:
                staged = out_pool.next()[0:ct.size, 0:m.size]
                nisa.activation(dst=staged, op=nl.copy, data=acc_t[t])
                nisa.dma_copy(dst=destination, src=staged)
            else:
                nisa.dma_copy(dst=destination, src=acc_t[t])
    return out
