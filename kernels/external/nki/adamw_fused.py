@nki.jit
def tuned_kernel(theta, g, m, v):
    """One AdamW step over [M, N] (t = 1, lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) in tiles of
    [P, UNROLL_FACTOR, TILE_SIZE] (UNROLL_FACTOR consecutive rows per partition) through PIPELINE_DEPTH rotating
    buffers per stream, the formula refactored into seven wide instructions per tile:
      gs  = 0.001 g^2                     SQUARE_ENGINE 0: a square activation of sqrt(0.001) g; 1: one vector op
      vt  = 0.999 v + gs                  vector (scalar_tensor_tensor)
      d   = sqrt(1e9 vt)                  scalar: 1000 sqrt(1000 v_t)
      r   = 1 / (d + 1e-5)                RECIP_ENGINE 0: the vector engine (tensor_scalar: add, reciprocal);
                                          1: the scalar engine (a reciprocal activation biased by 1e-5)
      mt  = 9 m + g                       vector: 10 m_t
      u   = mt * r                        UPDATE_ENGINE 0: vector, 1: GpSimd, 2: alternating tile by tile
      out = (1 - 1e-5) theta - u          FINAL_ENGINE 0: one vector instruction; 1: the scaling on the scalar
                                          engine, the subtract on GpSimd
    The second moment's chain works in place in one fp32 tile, the first moment's in another."""
    rows, cols = theta.shape
    out = nl.ndarray((rows, cols), dtype=DTYPE, buffer=nl.shared_hbm)
    shape = (P, UNROLL_FACTOR, TILE_SIZE)
    theta_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    g_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    m_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    v_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    out_tiles = _Pool(PIPELINE_DEPTH, shape, DTYPE)
    second = _Pool(2, shape, nl.float32)
    first = _Pool(2, shape, nl.float32)
    scaled = _Pool(2, shape, nl.float32) if FINAL_ENGINE == 1 else None
    step = 0
    for group in _folded_row_groups(rows, UNROLL_FACTOR):
        _, parts, fold = group
        for c in _tiles(cols, TILE_SIZE):
            loaded = []
            # g and v first: the longest dependency chain starts from them.
            for pool, source in ((g_tiles, g), (v_tiles, v), (m_tiles, m), (theta_tiles, theta)):
                tile = pool.next()[0:parts, 0:fold, 0:c.size]
                nisa.dma_copy(dst=tile, src=_folded(source, group, c.begin, c.end))
                loaded.append(tile)
            gt, vt, mt, tht = loaded
            s = second.next()[0:parts, 0:fold, 0:c.size]
            f = first.next()[0:parts, 0:fold, 0:c.size]
            if SQUARE_ENGINE == 0:
                nisa.activation(dst=s, op=nl.square, data=gt, scale=0.0316227766)  # (sqrt(0.001) g)^2
            else:
                nisa.scalar_tensor_tensor(dst=s, data=gt, op0=nl.multiply, operand0=0.001, op1=nl.multiply,
                                          operand1=gt)
            nisa.scalar_tensor_tensor(dst=s, data=vt, op0=nl.multiply, operand0=0.999, op1=nl.add, operand1=s)
            nisa.activation(dst=s, op=nl.sqrt, data=s, scale=1e9)  # 1000 sqrt(1000 v_t)
            if RECIP_ENGINE == 1:
                nisa.activation(dst=s, op=nl.reciprocal, data=s, bias=1e-5)
            else:
                nisa.tensor_scalar(dst=s, data=s, op0=nl.add, operand0=1e-5, op1=nl.reciprocal, operand1=0.0,
                                   engine=nisa.engine.vector)
            nisa.scalar_tensor_tensor(dst=f, data=mt, op0=nl.multiply, operand0=9.0, op1=nl.add, operand1=gt)
            on_gpsimd = UPDATE_ENGINE == 1 or (UPDATE_ENGINE == 2 and step % 2 == 1)
            step += 1
            nisa.tensor_tensor(dst=f, data1=f, data2=s, op=nl.multiply,
                               engine=nisa.engine.gpsimd if on_gpsimd else nisa.engine.vector)
            ot = out_tiles.next()[0:parts, 0:fold, 0:c.size]
            if FINAL_ENGINE == 0:
                nisa.scalar_tensor_tensor(dst=ot, data=tht, op0=nl.multiply, operand0=1.0 - 1e-5, op1=nl.subtract,
                                          operand1=f)
            else:
                ts = scaled.next()[0:parts, 0:fold, 0:c.size]
                nisa.activation(dst=ts, op=nl.copy, data=tht, scale=1.0 - 1e-5)
                nisa.tensor_tensor(dst=ot, data1=ts, data2=f, op=nl.subtract, engine=nisa.engine.gpsimd)
            nisa.dma_copy(dst=_folded(out, group, c.begin, c.end), src=ot)
    return out
