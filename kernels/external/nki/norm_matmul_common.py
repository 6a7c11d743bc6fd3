BANK = 512  # float32 columns of one PSUM bank


def _drain(dst, src, engine):
    """dst = src (a PSUM tile) on the vector engine or, as an identity activation, on the scalar engine."""
    if engine == 1:
        nisa.activation(dst=dst, op=nl.copy, data=src)
    else:
        nisa.tensor_copy(dst=dst, src=src, engine=nisa.engine.vector)


def _load_resident(w):
    """w [K, N] whole in SBUF: K tile k at partitions [0, k.size), columns [k.index * N, + N)."""
    K, N = w.shape
    tile = _Pool(1, (P, len(_tiles(K, P)) * N), DTYPE).next()
    for k in _tiles(K, P):
        nisa.dma_copy(dst=tile[0:k.size, k.index * N:(k.index + 1) * N], src=w[k.begin:k.end, :])
    return tile


def _transpose_rows(xT, rows_tile, rows, k0, width, banks):
    """xT[:, k.index * rows + r] = K tile k of x's row r, for the `rows` rows of rows_tile, which holds columns
    [k0, k0 + width) of x (k0 a multiple of P): [128, 128] transposes on the tensor engine, four to a PSUM bank side by
    side, each bank drained by one instruction on TRANSPOSE_ENGINE (a ragged last K tile by a second)."""
    for group in _tiles(width, BANK // P * P):
        bank = banks.next()
        ks = _tiles(group.size, P, group.begin)
        for k in ks:
            j = k.offset // P
            nisa.nc_transpose(dst=bank[0:k.size, j * rows:(j + 1) * rows], data=rows_tile[0:rows, k.begin:k.end])
        full = len([k for k in ks if k.size == P])
        first = (k0 + group.begin) // P  # the group's first K tile
        if full:
            _drain(xT[:, first * rows:(first + full) * rows], bank[:, 0:full * rows], TRANSPOSE_ENGINE)
        if full < len(ks):
            ragged = group.size - full * P
            _drain(xT[0:ragged, (first + full) * rows:(first + full + 1) * rows],
                   bank[0:ragged, full * rows:(full + 1) * rows], TRANSPOSE_ENGINE)


def _row_tile_matmuls(ps, xT, w_resident, rows, K, N, step):
    """ps[:, j] += xT[k]^T . w[k][:, step + j] over the K tiles, one matmul per PSUM bank of the step."""
    for k in _tiles(K, P):
        for j in _tiles(step.size, BANK):
            wcol = k.index * N + step.begin + j.begin
            nisa.nc_matmul(dst=ps[:, j.begin:j.end], stationary=xT[0:k.size, k.index * rows:(k.index + 1) * rows],
                           moving=w_resident[0:k.size, wcol:wcol + j.size], accumulate=k.index > 0)
