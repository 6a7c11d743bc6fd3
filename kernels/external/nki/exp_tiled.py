@nki.jit
def tuned_kernel(in_tensor):
    """out = exp(in_tensor) in tiles of [P, UNROLL_FACTOR, TILE_SIZE] (UNROLL_FACTOR consecutive rows per
    partition) streamed through PIPELINE_DEPTH rotating buffers: loads overlap exp and stores."""
    rows, cols = in_tensor.shape
    out_tensor = nl.ndarray((rows, cols), dtype=DTYPE, buffer=nl.shared_hbm)
    in_tiles = _Pool(PIPELINE_DEPTH, (P, UNROLL_FACTOR, TILE_SIZE), DTYPE)
    out_tiles = _Pool(PIPELINE_DEPTH, (P, UNROLL_FACTOR, TILE_SIZE), DTYPE)
    for group in _folded_row_groups(rows, UNROLL_FACTOR):
        _, parts, fold = group
        for c in _tiles(cols, TILE_SIZE):
            x = in_tiles.next()[0:parts, 0:fold, 0:c.size]
            nisa.dma_copy(dst=x, src=_folded(in_tensor, group, c.begin, c.end))
            y = out_tiles.next()[0:parts, 0:fold, 0:c.size]
            nisa.activation(dst=y, op=nl.exp, data=x)
            nisa.dma_copy(dst=_folded(out_tensor, group, c.begin, c.end), src=y)
    return out_tensor
