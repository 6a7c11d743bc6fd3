def _matmul_step(res_psum, stationary, moving, accumulate):
    """res_psum (+)= stationary^T . moving, one matmul per TILE_N columns of the moving operand."""
    for j in _tiles(res_psum.shape[1], TILE_N):
        nisa.nc_matmul(dst=res_psum[:, j.begin:j.end], stationary=stationary, moving=moving[:, j.begin:j.end],
                       accumulate=accumulate)


def _drain(res_psum, result_tiles, result, m, n):
    """The finished PSUM tile out through SBUF to result[m, n]."""
    res_sb = result_tiles.next()[0:res_psum.shape[0], 0:res_psum.shape[1]]
    nisa.tensor_copy(dst=res_sb, src=res_psum)
    nisa.dma_copy(dst=result[m.begin:m.end, n.begin:n.end], src=res_sb)
