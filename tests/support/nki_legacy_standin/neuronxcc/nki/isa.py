"""Stand-in for neuronxcc.nki.isa (tests only; see neuronxcc/__init__.py). Engines are accepted and ignored."""
import numpy as np

vector_engine, gpsimd_engine, scalar_engine, tensor_engine = "vector", "gpsimd", "scalar", "tensor"


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def _reduce(op, data, axis=None):
    """Reduce over the free axes (all but the partition axis), keeping them as size 1."""
    data = _f32(data)
    axes = tuple(range(1, data.ndim)) if axis is None else tuple(axis)
    return op.reduce(data, axis=axes, keepdims=True) if hasattr(op, "reduce") else op(data, axis=axes, keepdims=True)


def activation(op, data, bias=None, scale=1.0, dtype=None):
    x = _f32(data) * _f32(scale)
    if bias is not None:
        x = x + _f32(bias).reshape(_f32(bias).shape + (1,) * (x.ndim - _f32(bias).ndim))
    return _f32(op(x))


def activation_reduce(op, data, reduce_op, reduce_res, bias=None, scale=1.0, dtype=None):
    out = activation(op, data, bias=bias, scale=scale)
    reduce_res[...] = _reduce(reduce_op, out).reshape(reduce_res.shape)
    return out


def _column(operand, like):
    """A scalar, or a per-partition [p, 1] column broadcast along the free axes of `like`."""
    operand = _f32(operand)
    return operand.reshape(operand.shape + (1,) * (like.ndim - operand.ndim)) if operand.ndim else operand


def tensor_tensor(data1, data2, op, engine=None, dtype=None):
    return _f32(op(_f32(data1), _f32(data2)))


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, engine=None, dtype=None):
    data = _f32(data)
    out = op0(_column(operand0, data), data) if reverse0 else op0(data, _column(operand0, data))
    if op1 is not None:
        out = op1(out, _column(operand1, data))
    return _f32(out)


def tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res, engine=None, dtype=None):
    out = tensor_scalar(data, op0, operand0)
    reduce_res[...] = _reduce(reduce_op, out).reshape(reduce_res.shape)
    return out


def scalar_tensor_tensor(data, op0, operand0, op1, operand1, engine=None, dtype=None):
    data = _f32(data)
    return _f32(op1(op0(data, _column(operand0, data)), _f32(operand1)))


def tensor_reduce(op, data, axis, keepdims=False, dtype=None):
    out = _reduce(op, data, axis)
    return out if keepdims else np.squeeze(out, axis=tuple(axis))


def tensor_copy(src, engine=None, dtype=None):
    return _f32(src).copy()


def reciprocal(data, dtype=None):
    return _f32(1.0 / _f32(data))


def memset(shape, value, dtype=None, engine=None):
    return np.full(tuple(shape), value, dtype=np.float32)


def nc_matmul(stationary, moving, tile_position=(), tile_size=()):
    """stationary [K, M], moving [K, N] -> [M, N]: the contraction runs over the partitions. tile_position and
    tile_size (both or neither) run it on a tile of the 128x128 PE array: sizes 32, 64 or 128, each start a
    multiple of its size within the array, the stationary no larger than the tile."""
    if bool(tile_position) != bool(tile_size):
        raise ValueError("nc_matmul: tile_position and tile_size must both be set")
    if tile_size:
        (row, col), (rows, cols) = tile_position, tile_size
        for start, size in ((row, rows), (col, cols)):
            if size not in (32, 64, 128) or start % size or start + size > 128:
                raise ValueError(f"nc_matmul: PE tile at ({row}, {col}) of size ({rows}, {cols})")
        if stationary.shape[0] > rows or stationary.shape[1] > cols:
            raise ValueError(f"nc_matmul: stationary {tuple(stationary.shape)} exceeds its tile ({rows}, {cols})")
    return _f32(_f32(stationary).T.astype(np.float64) @ _f32(moving).astype(np.float64))


def nc_transpose(data, engine=None):
    return _f32(data).T.copy()


def dma_transpose(src):
    return _f32(src).T.copy()


def dma_copy(dst, src):
    dst[...] = _f32(src)


def affine_select(pred, on_true_tile, on_false_value, dtype=None):
    return _f32(np.where(pred, _f32(on_true_tile), np.float32(on_false_value)))
