class _RowTransposer(nl.NKIObject):
    """Row tiles of x [M, K] transposed on the tensor engine, K onto the partitions, into xT laid out K tile by
    K tile: K tile k at partitions [0, size) and columns [k * stride, k * stride + rows). Rows are loaded in
    [P, chunk] pieces; per K tile, the transposes of as many row tiles as fill a PSUM bank land side by side in
    it and are drained by one copy."""

    def __init__(self, x, chunk, row_tiles):
        self.x = x
        self.chunk = min(chunk, x.shape[1])
        self.bank = 512  # fp32 columns of one PSUM bank
        self.x_tiles = _Pool(2 * max(row_tiles, 1), (P, self.chunk), DTYPE)
        self.psum = _Pool(2, (P, self.bank), DTYPE, buffer=nl.psum)

    def transpose(self, m, xT, stride, drain_on_scalar=False):
        x = self.x
        for c in _tiles(x.shape[1], self.chunk):
            rows = []  # by row tile of the block
            for r in _tiles(m.size, P, m.begin):
                rows.append(self.x_tiles.next()[0:r.size, 0:c.size])
                nisa.dma_copy(dst=rows[-1], src=x[r.begin:r.end, c.begin:c.end])
            for k in _tiles(c.size, P, c.begin):
                for bank in _tiles(m.size, max(P, self.bank // P * P), m.begin):
                    tp = self.psum.next()[0:k.size, 0:bank.size]
                    for r in _tiles(bank.size, P, bank.begin):
                        nisa.nc_transpose(dst=tp[:, r.offset:r.offset + r.size],
                                          data=rows[(r.begin - m.begin) // P][:, k.offset:k.offset + k.size])
                    col = (k.begin // P) * stride + (bank.begin - m.begin)
                    dst = xT[0:k.size, col:col + bank.size]
                    if drain_on_scalar:
                        nisa.activation(dst=dst, op=nl.copy, data=tp)
                    else:
                        nisa.tensor_copy(dst=dst, src=tp, engine=nisa.engine.vector)


def _drain_psum(dst, psum, choice, step):
    """PSUM -> SBUF on the vector engine (0), the scalar engine (1), or alternating (2)."""
    if choice == 1 or (choice == 2 and step % 2 == 1):
        nisa.activation(dst=dst, op=nl.copy, data=psum)
    else:
        nisa.tensor_copy(dst=dst, src=psum, engine=nisa.engine.vector)


def _transpose_tile_by_tile(x, m, k0, k1, xT, stride, x_tiles, psum):
    """Rows m of x, columns [k0, k1), transposed one [P, P] tile at a time, each drained by its own copy:
    K tile j of the range at xT partitions [0, size), columns [j * stride + row offset, ...)."""
    for r in _tiles(m.size, P, m.begin):
        xt = x_tiles.next()[0:r.size, 0:k1 - k0]
        nisa.dma_copy(dst=xt, src=x[r.begin:r.end, k0:k1])
        for k in _tiles(k1 - k0, P):
            tp = psum.next()[0:k.size, 0:r.size]
            nisa.nc_transpose(dst=tp, data=xt[:, k.begin:k.end])
            col = k.index * stride + r.offset
            nisa.tensor_copy(dst=xT[0:k.size, col:col + r.size], src=tp, engine=nisa.engine.vector)


def _silu_by_exp(out, x, work):
    """out = x / (1 + exp(-x)) in four instructions, as NKIBench's starting kernels compute silu."""
    nisa.activation(dst=work, op=nl.exp, data=x, scale=-1.0)
    nisa.tensor_scalar(dst=work, data=work, op0=nl.add, operand0=1.0)
    nisa.reciprocal(dst=work, data=work)
    nisa.tensor_tensor(dst=out, data1=x, data2=work, op=nl.multiply, engine=nisa.engine.vector)
