def _bmm_sizes(lhs, rhs):
    """B, M, K, N of lhs [B * M, K] and rhs [B * K, N]."""
    BM, K = lhs.shape
    BK, N = rhs.shape
    B = BK // K
    return B, BM // B, K, N


def _bmm_naive_transposes(lhs, b, M, K, mb, lhs_tiles, lhsT_psum, lt_block):
    """NKIBench's starting kernel's transposes: every [P, K tile] of lhs in the 1024-row block mb of batch b
    loaded and transposed on the tensor engine, one at a time, into lt_block (K tile k at columns
    [k * 1024, ...))."""
    for m in _tiles(mb.size, P):
        row0 = b * M + mb.begin + m.begin
        for k in _tiles(K, P):
            lt = lhs_tiles.next()[0:m.size, 0:k.size]
            nisa.dma_copy(dst=lt, src=lhs[row0:row0 + m.size, k.begin:k.end])
            tp = lhsT_psum.next()[0:k.size, 0:m.size]
            nisa.nc_transpose(dst=tp, data=lt, engine=nisa.engine.tensor)
            col0 = k.index * 1024 + m.begin
            nisa.tensor_copy(dst=lt_block[0:k.size, col0:col0 + m.size], src=tp, engine=nisa.engine.vector)


def _bmm_naive_chunk(rhs, b, K, c, rhs_tiles):
    """Batch b's rhs columns c, K tile k at columns [k * 1024, ...)."""
    rt = rhs_tiles.next()
    for k in _tiles(K, P):
        nisa.dma_copy(dst=rt[0:k.size, k.index * 1024:k.index * 1024 + c.size],
                      src=rhs[b * K + k.begin:b * K + k.end, c.begin:c.end])
    return rt


def _bmm_naive_product(ps, lt_block, rt, K, m, n):
    """lhs rows m times rhs columns n (offsets in the chunk) into the PSUM tile ps, accumulated over K."""
    for k in _tiles(K, P):
        lcol, rcol = k.index * 1024 + m.begin, k.index * 1024 + n.begin
        nisa.nc_matmul(dst=ps, stationary=lt_block[0:k.size, lcol:lcol + m.size],
                       moving=rt[0:k.size, rcol:rcol + n.size], accumulate=k.index > 0)


class _BmmGroupStaging(nl.NKIObject):
    """The operands of a group of batches side by side on the PE array's row tiles: batch j of a group contracts
    over partitions [j * tile_rows, j * tile_rows + K) (the whole array for a group of one, K tile by K tile).
    Each batch's whole rhs is loaded once per group; per M tile the group's lhs tiles are transposed once,
    together by one tensor-engine transpose (side by side in one tile, batch j at columns [j * tile_rows, ...)),
    or each by a transposing DMA."""

    def __init__(self, lhs, rhs, group, dma_transpose):
        B, M, K, N = _bmm_sizes(lhs, rhs)
        self.lhs, self.rhs, self.M, self.K, self.N = lhs, rhs, M, K, N
        self.group, self.tile_rows = group, P // group
        self.k_tiles = len(_tiles(K, P)) if group == 1 else 1
        self.dma_transpose = dma_transpose
        self.rhs_tiles = _Pool(2, (P, self.k_tiles * N), DTYPE)
        self.lhs_tiles = _Pool(2, (P, P), DTYPE)
        self.lhsT_psum = None if dma_transpose else _Pool(1, (P, P), DTYPE, buffer=nl.psum)
        self.lhsT_tiles = _Pool(2, (P, self.k_tiles * P), DTYPE)

    def k_rows(self, j, k):
        """Partitions of batch j's K tile k in the rhs and lhsT tiles."""
        return j * self.tile_rows, j * self.tile_rows + k.size

    def matmul(self, dst, stationary, moving, accumulate, j):
        """Batch j's matmul on its PE row tile (the whole array for a group of one)."""
        if self.group == 1:
            nisa.nc_matmul(dst=dst, stationary=stationary, moving=moving, accumulate=accumulate)
        else:
            nisa.nc_matmul(dst=dst, stationary=stationary, moving=moving, accumulate=accumulate,
                           tile_position=(j * self.tile_rows, 0), tile_size=(self.tile_rows, P))

    def load_rhs(self, group):
        """The group's rhs: batch j's K tile k at k_rows(j, k), columns [k.index * N, + N)."""
        rt = self.rhs_tiles.next()
        K, N = self.K, self.N
        for j in range(group.size):
            b = group.begin + j
            for k in _tiles(K, P):
                r0, r1 = self.k_rows(j, k)
                nisa.dma_copy(dst=rt[r0:r1, k.index * N:(k.index + 1) * N], src=self.rhs[b * K + k.begin:b * K + k.end, :])
        return rt

    def transposed_lhs(self, group, m):
        """lhsT of every batch of the group for row tile m: batch j's K tile k at k_rows(j, k), columns
        [k.index * P, + m.size)."""
        lt_all = self.lhsT_tiles.next()
        for k in _tiles(self.K, P):
            lcol = k.index * P
            if self.dma_transpose:
                for j in range(group.size):
                    row0 = (group.begin + j) * self.M + m.begin
                    r0, r1 = self.k_rows(j, k)
                    nisa.dma_transpose(dst=lt_all[r0:r1, lcol:lcol + m.size],
                                       src=self.lhs[row0:row0 + m.size, k.begin:k.end], axes=(1, 0))
                continue
            lt = self.lhs_tiles.next()
            for j in range(group.size):
                row0 = (group.begin + j) * self.M + m.begin
                c0, c1 = self.k_rows(j, k)
                nisa.dma_copy(dst=lt[0:m.size, c0:c1], src=self.lhs[row0:row0 + m.size, k.begin:k.end])
            width = (group.size - 1) * self.tile_rows + k.size
            tp = self.lhsT_psum.next()[0:width, 0:m.size]
            nisa.nc_transpose(dst=tp, data=lt[0:m.size, 0:width], engine=nisa.engine.tensor)
            nisa.tensor_copy(dst=lt_all[0:width, lcol:lcol + m.size], src=tp, engine=nisa.engine.vector)
        return lt_all
