@nki.jit
def tuned_kernel(theta, g, m, v):
    """One AdamW step over [M, N] (t = 1, lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) with the
    structure of NKIBench's starting kernel: per row tile, each input loaded in [128, 1024] chunks, then per
    [128, 512] half-chunk the formula one operation per instruction (fifteen: the scalar products and sums on
    the vector engine, the sqrt on the scalar engine, a reciprocal), each into its own tile; the chunk stored.
    Single buffers: nothing overlaps."""
    rows, cols = theta.shape
    out = nl.ndarray((rows, cols), dtype=DTYPE, buffer=nl.shared_hbm)
    theta_tiles = _Pool(1, (P, 1024), DTYPE)
    m_tiles = _Pool(1, (P, 1024), DTYPE)
    v_tiles = _Pool(1, (P, 1024), DTYPE)
    g_tiles = _Pool(1, (P, 1024), DTYPE)
    out_tiles = _Pool(1, (P, 1024), DTYPE)
    temps = _Pool(14, (P, 512), nl.float32)  # one tile per intermediate, as the starting kernel names them
    vector = nisa.engine.vector
    for r in _tiles(rows, P):
        for c in _tiles(cols, 1024):
            loaded = []
            for pool, source in ((theta_tiles, theta), (m_tiles, m), (v_tiles, v), (g_tiles, g)):
                tile = pool.next()[0:r.size, 0:c.size]
                nisa.dma_copy(dst=tile, src=source[r.begin:r.end, c.begin:c.end])
                loaded.append(tile)
            th, mt, vt, gt = loaded
            ot = out_tiles.next()[0:r.size, 0:c.size]
            for h in _tiles(c.size, 512):
                th_h, mt_h, vt_h, gt_h = (x[:, h.begin:h.end] for x in (th, mt, vt, gt))
                t = [temps.next()[0:r.size, 0:h.size] for _ in range(14)]
                nisa.tensor_scalar(dst=t[0], data=th_h, op0=nl.multiply, operand0=1e-5, engine=vector)
                nisa.tensor_tensor(dst=t[1], data1=th_h, data2=t[0], op=nl.subtract, engine=vector)  # theta_t
                nisa.tensor_scalar(dst=t[2], data=mt_h, op0=nl.multiply, operand0=0.9, engine=vector)
                nisa.tensor_scalar(dst=t[3], data=gt_h, op0=nl.multiply, operand0=0.1, engine=vector)
                nisa.tensor_tensor(dst=t[4], data1=t[2], data2=t[3], op=nl.add, engine=vector)  # m_t
                nisa.tensor_scalar(dst=t[5], data=t[4], op0=nl.multiply, operand0=0.01, engine=vector)
                nisa.tensor_scalar(dst=t[6], data=vt_h, op0=nl.multiply, operand0=0.999, engine=vector)
                nisa.tensor_scalar(dst=t[7], data=gt_h, op0=nl.multiply, operand0=0.001, engine=vector)
                nisa.tensor_tensor(dst=t[8], data1=t[7], data2=gt_h, op=nl.multiply, engine=vector)
                nisa.tensor_tensor(dst=t[9], data1=t[6], data2=t[8], op=nl.add, engine=vector)  # v_t
                nisa.activation(dst=t[10], op=nl.sqrt, data=t[9], scale=1000.0)  # sqrt(1000 v_t)
                nisa.tensor_scalar(dst=t[11], data=t[10], op0=nl.add, operand0=1e-8, engine=vector)
                nisa.reciprocal(dst=t[12], data=t[11])
                nisa.tensor_tensor(dst=t[13], data1=t[5], data2=t[12], op=nl.multiply, engine=vector)  # the update
                nisa.tensor_tensor(dst=ot[:, h.begin:h.end], data1=t[1], data2=t[13], op=nl.subtract, engine=vector)
            nisa.dma_copy(dst=out[r.begin:r.end, c.begin:c.end], src=ot)
    return out
