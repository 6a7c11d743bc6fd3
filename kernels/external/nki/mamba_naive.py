NAIVE_CHUNK = 2048  # steps per chunk: the starting kernel's full rows, cut so that the working set fits SBUF


@nki.jit
def tuned_kernel(delta, u, a, b, c):
    """out[ch, m] = sum over s of c[s, m] * h[ch, s, m], h = scan(exp(delta * a[:, s]), delta * u * b[s]):
    NKIBench's starting kernel. States outer, channel tiles inner; delta and u reloaded per state, b[s] and
    c[s] broadcast along the partitions per state and tile, one instruction per operation, the sum over
    states in an on-chip accumulator. Rows in chunks of NAIVE_CHUNK steps, the scan carried across."""
    channels, steps = delta.shape
    states = a.shape[1]
    out = nl.ndarray((channels, steps), dtype=DTYPE, buffer=nl.shared_hbm)
    chunk = min(steps, NAIVE_CHUNK)
    channel_tiles = _tiles(channels, P)
    acc_pool = _Pool(len(channel_tiles), (P, steps), nl.float32)
    acc = []
    for ct in channel_tiles:
        acc.append(acc_pool.next()[0:ct.size, :])
        nisa.memset(dst=acc[-1], value=0.0)
    a_pool = _Pool(1, (P, 1), nl.float32)
    delta_pool = _Pool(1, (P, chunk), DTYPE)
    u_pool = _Pool(1, (P, chunk), DTYPE)
    b_pool = _Pool(1, (P, chunk), nl.float32)
    c_pool = _Pool(1, (P, chunk), nl.float32)
    work = _Pool(4, (P, chunk), nl.float32)
    scan_pool = _Pool(2, (P, chunk), nl.float32)  # a chunk's scan starts from the previous one's last column
    for s in range(states):
        for t, ct in enumerate(channel_tiles):
            a_i = a_pool.next()[0:ct.size, :]
            nisa.dma_copy(dst=a_i, src=a[ct.begin:ct.end, s:s + 1])
            previous = None
            for m in _tiles(steps, chunk):
                delta_i = delta_pool.next()[0:ct.size, 0:m.size]
                nisa.dma_copy(dst=delta_i, src=delta[ct.begin:ct.end, m.begin:m.end])
                delta_a = work.next()[0:ct.size, 0:m.size]
                nisa.activation(dst=delta_a, op=nl.exp, data=delta_i, scale=a_i)
                u_i = u_pool.next()[0:ct.size, 0:m.size]
                nisa.dma_copy(dst=u_i, src=u[ct.begin:ct.end, m.begin:m.end])
                b_all = b_pool.next()[:, 0:m.size]  # every partition: the broadcast's ones are [1, P]
                _broadcast_to_partitions(b_all, b[s:s + 1, m.begin:m.end])
                b_i = b_all[0:ct.size, :]
                delta_u = work.next()[0:ct.size, 0:m.size]
                nisa.tensor_tensor(dst=delta_u, data1=delta_i, data2=u_i, op=nl.multiply)
                delta_bu = work.next()[0:ct.size, 0:m.size]
                nisa.tensor_tensor(dst=delta_bu, data1=delta_u, data2=b_i, op=nl.multiply)
                scan = scan_pool.next()[0:ct.size, 0:m.size]
                initial = 0.0 if previous is None else previous[:, previous.shape[1] - 1:previous.shape[1]]
                nisa.tensor_tensor_scan(dst=scan, data0=delta_a, data1=delta_bu, initial=initial, op0=nl.multiply,
                                        op1=nl.add)
                previous = scan
                c_all = c_pool.next()[:, 0:m.size]
                _broadcast_to_partitions(c_all, c[s:s + 1, m.begin:m.end])
                c_i = c_all[0:ct.size, :]
                scan_c = work.next()[0:ct.size, 0:m.size]
                nisa.tensor_tensor(dst=scan_c, data1=scan, data2=c_i, op=nl.multiply)
                acc_m = acc[t][:, m.begin:m.end]
                nisa.tensor_tensor(dst=acc_m, data1=acc_m, data2=scan_c, op=nl.add)
    for t, ct in enumerate(channel_tiles):
        nisa.dma_copy(dst=out[ct.begin:ct.end, :], src=acc[t])
    return out
