def _matmul_step(res_psum, stationary, moving, accumulate):
    """res_psum (+)= stationary^T . moving, one matmul per TILE_N columns of the moving operand."""
    for j in _tiles(res_psum.shape[1], TILE_N):
        if accumulate:
            res_psum[:, j.begin:j.end] += nisa.nc_matmul(stationary, moving[:, j.begin:j.end])
        else:
            res_psum[:, j.begin:j.end] = nisa.nc_matmul(stationary, moving[:, j.begin:j.end])


def _drain(res_psum, result_tiles, result, m, n):
    """The finished PSUM tile out through SBUF to result[m, n]."""
    res_sb = result_tiles.next()[0:res_psum.shape[0], 0:res_psum.shape[1]]
    res_sb[...] = nisa.tensor_copy(res_psum)
    nl.store(result[m.begin:m.end, n.begin:n.end], value=res_sb)
