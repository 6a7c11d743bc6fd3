"""Strict stand-in for nki.isa (tests only). Each instruction binds its arguments against the documented signature
(_core.documented) and checks the rules its documentation states (quoted in the comments), then computes in
float32. Only the instructions an exported kernel uses are here; any other name is an AttributeError."""
from enum import Enum

import numpy as np

from . import language as nl
from ._core import DTYPE_BYTES, PARTITIONS, Tensor, documented, fail, nc_version as _nc_version
from .language import equal, maximum  # noqa: F401  (documented defaults: cmp_op=equal, reduce_op=maximum)


class engine(Enum):  # noqa: N801  (the documented names)
    tensor, vector, scalar, gpsimd, dma, sync, unknown = 1, 5, 2, 3, 4, 6, 0


class reduce_cmd(Enum):  # noqa: N801
    idle, reset, reduce, reset_reduce, load_reduce = 0, 1, 2, 3, 4


class dge_mode(Enum):  # noqa: N801
    unknown, swdge, hwdge, none = 0, 1, 2, 3


class oob_mode(Enum):  # noqa: N801
    error, skip = 0, 1


class matmul_perf_mode(Enum):  # noqa: N801
    none, double_row = "none", "double_row"


class nc_version(Enum):  # noqa: N801
    gen2, gen3, gen4 = 2, 3, 4


_ACTIVATIONS = ("exp", "silu", "sigmoid", "square", "sqrt", "rsqrt", "reciprocal", "copy")
_ALU = ("add", "subtract", "multiply", "maximum", "minimum")
_UNARY = ("reciprocal", "rsqrt")  # the 'Arithmetic Unary' operators of the ALU table that exports use


def _tensor(function, name, t, on_chip=True):
    if not isinstance(t, Tensor):
        fail(function, f"{name} must be an NkiTensor, got {type(t).__name__}")
    if on_chip and not t.on_chip():
        fail(function, f"{name} '{t.name}' is in {t.buffer}; it must be an SBUF or PSUM tile")
    if t.on_chip() and t.shape[0] > PARTITIONS:
        fail(function, f"{name} has {t.shape[0]} partitions, more than {PARTITIONS}")
    return t


def _same_layout(function, dst, name, t):
    """'The partition dimension size of input data and output dst tiles must be the same ... The number of elements
    per partition ... must be the same.'"""
    if dst.shape[0] != t.shape[0] or dst.per_partition() != t.per_partition():
        fail(function, f"dst {dst.shape} and {name} {t.shape} differ in partitions or elements per partition")


def _engine(function, value, allowed, *tiles):
    if not isinstance(value, engine) or value not in allowed:
        fail(function, f"engine {value!r} (accepted: {', '.join('engine.' + e.name for e in allowed)})")
    # 'GpSimd Engine cannot access PSUM.'
    if value == engine.gpsimd and any(isinstance(t, Tensor) and t.buffer == "psum" for t in tiles):
        fail(function, "the GpSimd engine cannot access PSUM")


def _op(function, name, op, names):
    if getattr(op, "__name__", None) not in names:
        fail(function, f"{name}={getattr(op, '__name__', op)!r} (accepted: {', '.join('nl.' + n for n in names)})")
    return op


def _scalar_or_column(function, name, operand, data, fp32=True):
    """'a scalar constant or a tile of shape (data.shape[0], 1)' (operands of tensor_scalar must be float32)."""
    if isinstance(operand, Tensor):
        _tensor(function, name, operand)
        if operand.shape[0] != data.shape[0] or operand.per_partition() != 1:
            fail(function, f"{name} of shape {operand.shape} is not a ({data.shape[0]}, 1) column")
        if fp32 and operand.dtype != nl.float32:
            fail(function, f"{name} is {operand.dtype}; it must be float32")
        return operand.read().reshape((data.shape[0],) + (1,) * (data.ndim - 1))
    if not isinstance(operand, (int, float)) or isinstance(operand, bool):
        fail(function, f"{name}={operand!r} is neither a constant nor a tile")
    return np.float32(operand)


def _no_two_psum(function, a, b, names):
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.buffer == b.buffer == "psum":
        fail(function, f"{names} cannot both reside in PSUM")


@documented("nki.isa")
def get_nc_version():
    return nc_version(_nc_version())


@documented("nki.isa")
def dma_copy(dst, src, priority=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, engine=engine.unknown,
             name=None):
    _tensor("nisa.dma_copy", "dst", dst, on_chip=False)
    _tensor("nisa.dma_copy", "src", src, on_chip=False)
    for t, n in ((dst, "dst"), (src, "src")):
        if t.buffer == "psum":  # 'Both src and dst tiles can be in HBM or SBUF.'
            fail("nisa.dma_copy", f"{n} is in PSUM; DMAs move data between HBM and SBUF")
    if dst.size != src.size:  # 'The total number of data elements in src must match that of dst.'
        fail("nisa.dma_copy", f"dst {dst.shape} and src {src.shape} differ in element count")
    # 'HWDGE ... no type casting occurs.'
    if dge_mode == dge_mode.hwdge and dst.dtype != src.dtype:
        fail("nisa.dma_copy", "a hardware-DGE copy does not cast: dst and src dtypes differ")
    dst.write(src.read().reshape(dst.shape))


@documented("nki.isa")
def tensor_copy(dst, src, engine=engine.unknown, name=None):
    _tensor("nisa.tensor_copy", "dst", dst)
    _tensor("nisa.tensor_copy", "src", src)
    _same_layout("nisa.tensor_copy", dst, "src", src)
    _engine("nisa.tensor_copy", engine, (engine.vector, engine.scalar, engine.gpsimd, engine.unknown), dst, src)
    if engine == engine.scalar and _nc_version() == 2:
        fail("nisa.tensor_copy", "on NeuronCore v2 tensor_copy does not run on the Scalar engine")
    dst.write(src.read().reshape(dst.shape))


@documented("nki.isa")
def memset(dst, value, engine=engine.unknown, name=None):
    _tensor("nisa.memset", "dst", dst)
    _engine("nisa.memset", engine, (engine.vector, engine.gpsimd, engine.unknown), dst)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        fail("nisa.memset", f"value {value!r} is not a compile-time constant")
    # 'the value argument must match the destination tensor's dtype' (0.3 migration guide)
    if dst.dtype in ("int32", "uint32", "int8", "uint8", "int16", "uint16") and not isinstance(value, int):
        fail("nisa.memset", f"value {value!r} for an integer tile")
    dst.write(np.float32(value))


@documented("nki.isa")
def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              accumulate=None, tile_position=(), tile_size=(), perf_mode=matmul_perf_mode.none, name=None):
    f = "nisa.nc_matmul"
    for t, n in ((dst, "dst"), (stationary, "stationary"), (moving, "moving")):
        _tensor(f, n, t)
    # 'The nc_matmul instruction must read inputs from SBUF and write outputs to PSUM.'
    if stationary.buffer != "sbuf" or moving.buffer != "sbuf":
        fail(f, "stationary and moving must be SBUF tiles")
    if dst.buffer != "psum":
        fail(f, f"dst '{dst.name}' is in {dst.buffer}; the matmul output must be a PSUM tile")
    # 'The dst tile must be a float32 tile in NeuronCore-v2 and NeuronCore-v3.'
    if dst.dtype != nl.float32 and not (_nc_version() >= 4 and dst.dtype == nl.bfloat16):
        fail(f, f"dst is {dst.dtype}; a matmul writes float32 PSUM")
    # 'if one of the input tiles is tfloat32/float32, the other tile must also be tfloat32/float32.'
    wide = {stationary.dtype in ("float32", "tfloat32"), moving.dtype in ("float32", "tfloat32")}
    if len(wide) == 2:
        fail(f, f"stationary {stationary.dtype} with moving {moving.dtype}: float32 pairs only with float32")
    if stationary.ndim != 2 or moving.ndim != 2:
        fail(f, f"stationary {stationary.shape} and moving {moving.shape} must be 2-d")
    k, m = stationary.shape
    k2, n = moving.shape
    rows, cols = 128, 128
    if bool(tile_position) != bool(tile_size):
        fail(f, "tile_position and tile_size must both be set to enable tiling mode")
    if tile_size:
        (row, col), (rows, cols) = tile_position, tile_size
        sizes = (32, 64, 128) if _nc_version() >= 3 else (64, 128)
        for start, size in ((row, rows), (col, cols)):
            if size not in sizes or start % size or start + size > 128:
                fail(f, f"PE tile at ({row}, {col}) of size ({rows}, {cols})")
    # 'The partition dimension sizes of the stationary and moving tiles must be identical. They must not exceed
    # 128 ... or row_size ... The free dimension size of stationary must not exceed 128 ... or column_size.'
    if k != k2 or k > rows:
        fail(f, f"contraction: stationary {stationary.shape}, moving {moving.shape}, PE rows {rows}")
    if tile_size:
        # A PE row multiplies the partition of its index ('partition axis ... must never exceed 128, due to the
        # number of PE rows', the Trainium architecture guide): a row tile's operands lie in its partitions.
        for t, label in ((stationary, "stationary"), (moving, "moving")):
            first = t.first_partition()
            if not (row <= first and first + k <= row + rows):
                fail(f, f"{label} in partitions [{first}, {first + k}) is outside the PE row tile [{row}, {row + rows})")
    if m > cols:
        fail(f, f"stationary free size {m} exceeds {cols}")
    # 'On NeuronCore-v2 and -v3, the free dimension size of moving tile must not exceed 512.'
    if n > (512 if _nc_version() <= 3 else 4096):
        fail(f, f"moving free size {n} exceeds one PSUM bank")
    if dst.shape != (m, n):
        fail(f, f"dst {dst.shape} for stationary {stationary.shape} and moving {moving.shape}: expected {(m, n)}")
    first, last = dst.psum_bank_span()
    if first != last:
        fail(f, f"dst spans PSUM banks {first} to {last}; a matmul writes one bank")
    written = dst._flags
    if accumulate is None:  # 'auto-detect based on whether this PSUM location was previously written'
        if written.any() and not written.all():
            fail(f, "accumulate=None over a dst only partly written by earlier matmuls")
        accumulate = bool(written.all())
    if accumulate and not written.all():
        # 'Using accumulate=True on an uninitialized PSUM location is undefined behavior on all targets.'
        fail(f, f"accumulate=True into '{dst.name}' where no matmul wrote first")
    product = (stationary.read().astype(np.float64).T @ moving.read().astype(np.float64)).astype(np.float32)
    values = dst.read() + product if accumulate else product
    dst._values[...] = values
    written[...] = True


@documented("nki.isa")
def nc_transpose(dst, data, engine=engine.unknown, name=None):
    f = "nisa.nc_transpose"
    _tensor(f, "dst", dst)
    _tensor(f, "data", data)
    _engine(f, engine, (engine.tensor, engine.vector, engine.unknown))
    on_pe = engine == engine.tensor or (engine == engine.unknown and max(data.shape[0], data.per_partition()) > 32)
    if on_pe:
        # 'Tensor Engine nc_transpose must read the input tile from SBUF and write the transposed result to PSUM.'
        if data.buffer != "sbuf" or dst.buffer != "psum":
            fail(f, "on the tensor engine the input is an SBUF tile and the output a PSUM tile")
        if data.shape[0] > 128 or data.per_partition() > 128:
            fail(f, f"input {data.shape} exceeds [128, 128]")
        first, last = dst.psum_bank_span()
        if first != last:
            fail(f, f"dst spans PSUM banks {first} to {last}")
    elif data.shape[0] > 32 or data.per_partition() > 32:
        fail(f, f"the vector engine transposes at most [32, 32], not {data.shape}")
    # 'The output dst tile must have the same data type as that of data.'
    if dst.dtype != data.dtype:
        fail(f, f"dst is {dst.dtype} and data {data.dtype}; a transpose keeps the dtype")
    flat = data.read().reshape(data.shape[0], -1)
    if dst.shape[0] != flat.shape[1] or dst.per_partition() != flat.shape[0]:
        fail(f, f"dst {dst.shape} for data {data.shape}")
    dst.write(flat.T.reshape(dst.shape))


_DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


@documented("nki.isa")
def dma_transpose(dst, src, axes=None, priority=None, dge_mode=dge_mode.unknown, oob_mode=oob_mode.error,
                  name=None):
    f = "nisa.dma_transpose"
    _tensor(f, "dst", dst, on_chip=False)
    _tensor(f, "src", src, on_chip=False)
    if dst.buffer != "sbuf":  # 'dst: the destination of transpose, must be a tile in SBUF.'
        fail(f, f"dst is in {dst.buffer}; it must be an SBUF tile")
    if src.buffer == "psum":  # 'src: ... must be a tile in HBM or SBUF.'
        fail(f, "src is in PSUM; it must be in HBM or SBUF")
    if src.dtype != dst.dtype:
        fail(f, f"src.dtype {src.dtype} != dst.dtype {dst.dtype}")
    if DTYPE_BYTES[src.dtype] != 2:  # 'src.dtype is 2 bytes'
        fail(f, f"src is {src.dtype}; the DMA transposes 2-byte data only")
    if src.ndim not in _DMA_TRANSPOSE_AXES:
        fail(f, f"src of {src.ndim} dimensions (2, 3 or 4 are accepted)")
    permutation = _DMA_TRANSPOSE_AXES[src.ndim]
    if axes is not None and tuple(axes) != permutation:
        fail(f, f"axes {axes} for a {src.ndim}-d source (supported: {permutation})")
    if src.shape[-1] > 128:  # 'src.shape[-1] <= 128'
        fail(f, f"src.shape[-1] = {src.shape[-1]} exceeds 128")
    if dge_mode not in (dge_mode.unknown, dge_mode.hwdge):
        fail(f, f"dge_mode {dge_mode} for a direct transpose (unknown or hwdge)")
    if dge_mode == dge_mode.hwdge:
        if src.ndim == 2 and src.shape[0] != 16:
            fail(f, f"a 2-d hardware-DGE transpose takes src.shape[0] == 16, not {src.shape[0]}")
        if src.ndim > 2 and (src.shape[0] not in (1, 2, 4, 8, 16) or (src.shape[0] * src.shape[-2]) % 16):
            fail(f, f"src {src.shape} for a hardware-DGE transpose")
    expected = tuple(src.shape[a] for a in permutation)
    if dst.shape != expected:
        fail(f, f"dst {dst.shape} for src {src.shape}: expected {expected}")
    dst.write(np.transpose(src.read(), permutation))


@documented("nki.isa")
def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None):
    f = "nisa.tensor_tensor"
    for t, n in ((dst, "dst"), (data1, "data1"), (data2, "data2")):
        _tensor(f, n, t)
    _same_layout(f, dst, "data1", data1)
    _same_layout(f, dst, "data2", data2)
    _no_two_psum(f, data1, data2, "data1 and data2")
    _engine(f, engine, (engine.vector, engine.gpsimd, engine.unknown), dst, data1, data2)
    _op(f, "op", op, _ALU + ("power",))
    if op.__name__ == "power":
        # 'nl.power. (Which runs on the GpSimd engine.) ... the input/output tiles cannot be in PSUM if op is
        # nl.power.'
        if engine not in (engine.gpsimd, engine.unknown):
            fail(f, f"op=nl.power runs on the GpSimd engine, not {engine}")
        _engine(f, engine.gpsimd, (engine.gpsimd,), dst, data1, data2)
    dst.write(op(data1.read().reshape(dst.shape), data2.read().reshape(dst.shape)))


@documented("nki.isa")
def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None):
    """'result[:, 0] = op1(op0(data0[:, 0], initial), data1[:, 0]); result[:, i] = op1(op0(data0[:, i],
    result[:, i-1]), data1[:, i])' per partition, on the Vector Engine, in float32 math."""
    f = "nisa.tensor_tensor_scan"
    for t, n in ((dst, "dst"), (data0, "data0"), (data1, "data1")):
        _tensor(f, n, t)
    # 'The two input tiles (data0 and data1) must have the same partition axis size and the same number of
    # elements per partition.'
    _same_layout(f, dst, "data0", data0)
    _same_layout(f, dst, "data1", data1)
    # 'The two input tiles, data0 and data1 cannot both reside in PSUM.'
    _no_two_psum(f, data0, data1, "data0 and data1")
    _op(f, "op0", op0, _ALU)
    _op(f, "op1", op1, _ALU)
    # 'initial can either be a float32 compile-time scalar constant ... or a tile with the same partition axis
    # size as data0/data1 and one element per partition.'
    state = _scalar_or_column(f, "initial", initial, data0, fp32=False)
    a = data0.read().reshape(dst.shape[0], -1)
    b = data1.read().reshape(dst.shape[0], -1)
    state = np.broadcast_to(np.asarray(state, dtype=np.float32).reshape(-1, 1), (dst.shape[0], 1))[:, 0].copy()
    out = np.empty_like(a)
    for i in range(a.shape[1]):
        x = op0(state, a[:, i]) if reverse0 else op0(a[:, i], state)
        state = (op1(b[:, i], x) if reverse1 else op1(x, b[:, i])).astype(np.float32)
        out[:, i] = state
    dst.write(out.reshape(dst.shape))


@documented("nki.isa")
def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  engine=engine.unknown, name=None):
    f = "nisa.tensor_scalar"
    _tensor(f, "dst", dst)
    _tensor(f, "data", data)
    _same_layout(f, dst, "data", data)
    _engine(f, engine, (engine.vector, engine.scalar, engine.gpsimd, engine.unknown), dst, data)
    _op(f, "op0", op0, _ALU + _UNARY)
    if engine == engine.gpsimd and not (op0.__name__ == "rsqrt" and op1 is None):
        fail(f, "engine.gpsimd is allowed for rsqrt only")
    if engine == engine.scalar and _nc_version() == 3:
        # 'The Scalar Engine on trn2 only supports some operator combinations'
        combo = (op0.__name__, op1.__name__ if op1 is not None else None)
        if combo not in (("multiply", "add"), ("multiply", None), ("add", None)):
            fail(f, f"op0/op1 {combo} on the Scalar engine of trn2")
    if (op1 is None) != (operand1 is None):
        fail(f, "op1 and operand1 must be None (default values) when unused")
    x = data.read()
    out = _scalar_op(f, "operand0", op0, operand0, x, data, reverse0)
    if op1 is not None:
        _op(f, "op1", op1, _ALU + _UNARY)
        out = _scalar_op(f, "operand1", op1, operand1, out, data, reverse1)
    dst.write(np.asarray(out).reshape(dst.shape))


def _scalar_op(function, name, op, operand, x, data, reverse):
    """One operator of tensor_scalar: a unary one ('operand0 ... Must be None or 0 when op0 is a unary operator
    (e.g., nl.abs)') applies to x alone; a binary one takes the scalar or [P, 1] column operand."""
    if op.__name__ in _UNARY:
        if operand is not None and (isinstance(operand, Tensor) or operand != 0):
            fail(function, f"{name}={operand!r} for the unary operator nl.{op.__name__} (None or 0)")
        return op(x)
    a = _scalar_or_column(function, name, operand, data)
    return op(a, x) if reverse else op(x, a)


def _reduce_axes(function, data, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    # 'The reduction axes must be the last contiguous free dimension(s) of the tile ... Axis 0 cannot be reduced.'
    if not axes or 0 in axes or tuple(sorted(axes)) != tuple(range(data.ndim - len(axes), data.ndim)):
        fail(function, f"axis {axis} for a tile of shape {data.shape}")
    return axes


@documented("nki.isa")
def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    f = "nisa.tensor_reduce"
    _tensor(f, "dst", dst)
    _tensor(f, "data", data)
    axes = _reduce_axes(f, data, axis)
    reducer = nl._reducer(op, f)
    out = reducer.reduce(data.read(), axis=axes, keepdims=True)
    if dst.shape[0] != data.shape[0] or dst.size != out.size:
        fail(f, f"dst {dst.shape} for the reduction of {data.shape} over {axes}")
    dst.write((-out if negate else out).reshape(dst.shape))


def _activate(f, dst, op, data, bias, scale):
    _tensor(f, "dst", dst)
    _tensor(f, "data", data)
    _same_layout(f, dst, "data", data)
    _op(f, "op", op, _ACTIVATIONS)
    x = data.read() * _scalar_or_column(f, "scale", scale, data)
    if bias is not None:
        # 'nki.isa.activation(op=nl.reciprocal) doesn't support setting bias on NeuronCore-v2.' (NKI engine
        # selection notes)
        if op.__name__ == "reciprocal" and _nc_version() == 2:
            fail(f, "on NeuronCore v2 activation(op=nl.reciprocal) takes no bias")
        if not isinstance(bias, Tensor) and _nc_version() == 2:
            # 'In NeuronCore-v2, the bias must be a [N, 1] vector'
            fail(f, "on NeuronCore v2 the bias must be a [N, 1] tile, not a constant")
        x = x + _scalar_or_column(f, "bias", bias, data, fp32=False)
    return op(x)


def _reduce_result(f, reduce_res, data, values, reducer):
    if reduce_res is None:
        return
    _tensor(f, "reduce_res", reduce_res)
    if reduce_res.shape[0] != data.shape[0] or reduce_res.per_partition() != 1:
        fail(f, f"reduce_res {reduce_res.shape} is not a ({data.shape[0]}, 1) tile")
    axes = tuple(range(1, values.ndim))
    reduce_res.write(reducer.reduce(values, axis=axes).reshape(reduce_res.shape))


@documented("nki.isa")
def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle,
               name=None):
    f = "nisa.activation"
    out = _activate(f, dst, op, data, bias, scale)
    if reduce_res is not None or reduce_op is not None:
        if reduce_cmd != reduce_cmd.reset_reduce or reduce_op is None or reduce_op.__name__ != "add":
            fail(f, "the stand-in checks a reduction only as reduce_op=nl.add with reduce_cmd=reset_reduce")
        _reduce_result(f, reduce_res, data, out, np.add)
    dst.write(out)


@documented("nki.isa")
def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    f = "nisa.activation_reduce"
    out = _activate(f, dst, op, data, bias, scale)
    if _nc_version() == 2 and reduce_op.__name__ != "add":  # 'On NeuronCore-v2, the reduce_op must be nl.add.'
        fail(f, "on NeuronCore v2 the reduce_op must be nl.add")
    _reduce_result(f, reduce_res, data, out, nl._reducer(reduce_op, f))
    dst.write(out)


@documented("nki.isa")
def reciprocal(dst, data, name=None):
    f = "nisa.reciprocal"
    _tensor(f, "dst", dst)
    _tensor(f, "data", data)
    _same_layout(f, dst, "data", data)
    dst.write(1.0 / data.read())


@documented("nki.isa")
def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None):
    f = "nisa.scalar_tensor_tensor"
    for t, n in ((dst, "dst"), (data, "data"), (operand1, "operand1")):
        _tensor(f, n, t)
    _same_layout(f, dst, "data", data)
    _same_layout(f, dst, "operand1", operand1)
    _no_two_psum(f, data, operand1, "data and operand1")
    _op(f, "op0", op0, _ALU)
    _op(f, "op1", op1, _ALU)
    x = data.read()
    a = _scalar_or_column(f, "operand0", operand0, data, fp32=False)
    out = op0(a, x) if reverse0 else op0(x, a)
    b = operand1.read().reshape(out.shape)
    dst.write(op1(b, out) if reverse1 else op1(out, b))


@documented("nki.isa")
def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False,
                         reduce_cmd=reduce_cmd.reset_reduce, reduce_init=None, reduce_res_negate=False, name=None):
    f = "nisa.tensor_scalar_reduce"
    _tensor(f, "dst", dst)
    _tensor(f, "data", data)
    _same_layout(f, dst, "data", data)
    _op(f, "op0", op0, _ALU)
    if reverse0:  # 'reverse0: (not supported yet)'
        fail(f, "reverse0 is not supported yet")
    if reduce_cmd != reduce_cmd.reset_reduce:
        fail(f, "the stand-in checks reduce_cmd=reset_reduce only")
    out = op0(data.read(), _scalar_or_column(f, "operand0", operand0, data))
    values = out
    if reduce_res_negate:
        values = -out
    _reduce_result(f, reduce_res, data, values if not reduce_res_negate else out, nl._reducer(reduce_op, f))
    if reduce_res_negate and reduce_res is not None:
        reduce_res.write(-reduce_res.read())
    dst.write(out)


@documented("nki.isa")
def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=equal, offset=0,
                  name=None):
    f = "nisa.affine_select"
    _tensor(f, "dst", dst)
    _tensor(f, "on_true_tile", on_true_tile)
    # 'The output dst tile must be in SBUF. The input on_true_tile must also be in SBUF.'
    if dst.buffer != "sbuf" or on_true_tile.buffer != "sbuf":
        fail(f, "dst and on_true_tile must be SBUF tiles")
    _same_layout(f, dst, "on_true_tile", on_true_tile)
    if not isinstance(on_false_value, float):  # 'The on_false_value must be float32'
        fail(f, f"on_false_value {on_false_value!r} must be a float")
    pattern = [list(p) for p in pattern]
    if len(pattern) > 4 or any(len(p) != 2 for p in pattern):
        fail(f, f"pattern {pattern}: up to 4 [step, num] pairs")
    if int(np.prod([p[1] for p in pattern])) != dst.per_partition():
        # 'The total number of elements in pattern must match the number of elements per partition'
        fail(f, f"pattern {pattern} covers {np.prod([p[1] for p in pattern])} elements per partition, dst has "
                f"{dst.per_partition()}")
    _op(f, "cmp_op", cmp_op, ("equal", "greater_equal"))
    value = np.full((dst.shape[0], 1), offset, dtype=np.int64) + np.arange(dst.shape[0])[:, None] * channel_multiplier
    free = np.zeros(1, dtype=np.int64)
    for step, num in pattern:
        free = (free[:, None] + np.arange(num)[None, :] * step).reshape(-1)
    predicate = cmp_op(value + free[None, :], 0)
    x = on_true_tile.read().reshape(dst.shape[0], -1)
    dst.write(np.where(predicate, x, np.float32(on_false_value)).reshape(dst.shape))
