@nki.jit
def tuned_kernel(x, cos, sin):
    """Rotary embedding, rotate-half form: per head, y1 = x1 cos - x2 sin and y2 = x2 cos + x1 sin on the halves
    x1, x2 of its head_dim columns. Per row tile and head, six instructions on [rows, half] slices on the
    vector engine; single buffers."""
    seq, width = x.shape
    half = cos.shape[1]
    head_dim = 2 * half
    heads = width // head_dim
    y = nl.ndarray((seq, width), dtype=DTYPE, buffer=nl.shared_hbm)
    x_tiles = _Pool(1, (P, width), DTYPE)
    y_tiles = _Pool(1, (P, width), DTYPE)
    tables = _Pool(2, (P, half), DTYPE)
    products = _Pool(2, (P, half), nl.float32)
    for r in _tiles(seq, P):
        xt = x_tiles.next()[0:r.size, :]
        nisa.dma_copy(dst=xt, src=x[r.begin:r.end, :])
        c = tables.next()[0:r.size, :]
        s = tables.next()[0:r.size, :]
        nisa.dma_copy(dst=c, src=cos[r.begin:r.end, :])
        nisa.dma_copy(dst=s, src=sin[r.begin:r.end, :])
        yt = y_tiles.next()[0:r.size, :]
        for h in range(heads):
            at = h * head_dim
            x1, x2 = xt[:, at:at + half], xt[:, at + half:at + head_dim]
            a = products.next()[0:r.size, :]
            b = products.next()[0:r.size, :]
            nisa.tensor_tensor(dst=a, data1=x1, data2=c, op=nl.multiply)
            nisa.tensor_tensor(dst=b, data1=x2, data2=s, op=nl.multiply)
            nisa.tensor_tensor(dst=yt[:, at:at + half], data1=a, data2=b, op=nl.subtract)
            nisa.tensor_tensor(dst=a, data1=x2, data2=c, op=nl.multiply)
            nisa.tensor_tensor(dst=b, data1=x1, data2=s, op=nl.multiply)
            nisa.tensor_tensor(dst=yt[:, at + half:at + head_dim], data1=a, data2=b, op=nl.add)
        nisa.dma_copy(dst=y[r.begin:r.end, :], src=yt)
    return y
