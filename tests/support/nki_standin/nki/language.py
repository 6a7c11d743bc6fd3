"""Strict stand-in for nki.language (tests only): the names an exported kernel uses, each with its documented
signature (see _core.py). Values are float32 numpy arrays; every new tensor is filled with NaN, so reading memory
never written fails the comparison with the reference."""

import numpy as np

from ._core import DTYPE_BYTES, ON_CHIP, PARTITIONS, PSUM_BANK_BYTES, PSUM_BANKS, Tensor, _Allocation, documented, \
    fail

bool_, int8, int16, int32, uint8, uint16, uint32 = "bool_", "int8", "int16", "int32", "uint8", "uint16", "uint32"
float16, float32, bfloat16, tfloat32 = "float16", "float32", "bfloat16", "tfloat32"
sbuf, psum, hbm, private_hbm, shared_hbm = "sbuf", "psum", "hbm", "private_hbm", "shared_hbm"
NkiTensor = Tensor


class NKIObject:
    """Base of the classes a kernel may define (the NKI language guide: 'the class must inherit from NKIObject and
    no other classes')."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class _TileSize:
    pmax = PARTITIONS
    psum_fmax = psum_bank_fmax = PSUM_BANK_BYTES // 4
    psum_bank_fmax_bytes = PSUM_BANK_BYTES
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    psum_num_banks = PSUM_BANKS


tile_size = _TileSize()
def _reset():
    pass


@documented("nki.language")
def ndarray(shape, dtype, buffer=sbuf, name='', address=None):
    shape = tuple(int(s) for s in shape)
    if dtype not in DTYPE_BYTES:
        fail("nl.ndarray", f"dtype {dtype!r}")
    if buffer not in (sbuf, psum, hbm, private_hbm, shared_hbm):
        fail("nl.ndarray", f"buffer {buffer!r}")
    if any(s <= 0 for s in shape):
        fail("nl.ndarray", f"shape {shape}")
    if buffer in ON_CHIP and shape[0] > PARTITIONS:
        fail("nl.ndarray", f"{buffer} tensor {name or ''} of shape {shape}: partition dimension {shape[0]} "
                           f"exceeds {PARTITIONS}")
    if buffer == psum:
        # One tensor fits the PSUM of a partition (8 banks of 2 KiB). The sum over the kernel's tensors is not
        # checked: the compiler allocates by liveness, which Python's references do not show.
        per_partition = int(np.prod(shape[1:])) * DTYPE_BYTES[dtype]
        if per_partition > PSUM_BANKS * PSUM_BANK_BYTES:
            fail("nl.ndarray", f"PSUM tensor of shape {shape} ({dtype}) takes {per_partition} bytes per partition, "
                               f"more than the {PSUM_BANKS} banks of {PSUM_BANK_BYTES} bytes")
    allocation = _Allocation(shape, dtype, buffer, name or f"t{id(shape)}")
    return Tensor(allocation, allocation.values, allocation.matmul_written)


def _hbm_input(array, dtype):
    allocation = _Allocation(array.shape, dtype, hbm, "input")
    allocation.values[...] = array
    return Tensor(allocation, allocation.values)


# Operators: nisa's op, op0, op1 and reduce_op take these functions; the stand-in applies them to float32 arrays.
@documented("nki.language")
def add(x, y, dtype=None):
    return np.add(x, y)


@documented("nki.language")
def subtract(x, y, dtype=None):
    return np.subtract(x, y)


@documented("nki.language")
def multiply(x, y, dtype=None):
    return np.multiply(x, y)


@documented("nki.language")
def maximum(x, y, dtype=None):
    return np.maximum(x, y)


@documented("nki.language")
def minimum(x, y, dtype=None):
    return np.minimum(x, y)


@documented("nki.language")
def equal(x, y, dtype=None):
    return np.equal(x, y)


@documented("nki.language")
def greater_equal(x, y, dtype=None):
    return np.greater_equal(x, y)


@documented("nki.language")
def exp(x, dtype=None):
    return np.exp(x)


@documented("nki.language")
def silu(x, dtype=None):
    return x / (1.0 + np.exp(-x))


@documented("nki.language")
def sigmoid(x, dtype=None):
    return 1.0 / (1.0 + np.exp(-x))


@documented("nki.language")
def square(x, dtype=None):
    return x * x


@documented("nki.language")
def sqrt(x, dtype=None):
    return np.sqrt(x)


@documented("nki.language")
def rsqrt(x, dtype=None):
    return 1.0 / np.sqrt(x)


@documented("nki.language")
def copy(x, dtype=None):
    return np.array(x, dtype=np.float32)


@documented("nki.language")
def reciprocal(x, dtype=None):
    return 1.0 / np.asarray(x, dtype=np.float32)


@documented("nki.language")
def power(x, y, dtype=None):
    return np.power(x, y)


# Reductions: the ALU operator each stands for, applied along axes.
_REDUCERS = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum, "multiply": np.multiply}


def _reducer(op, function):
    name = getattr(op, "__name__", None)
    if name not in _REDUCERS:
        fail(function, f"reduce operator {name or op!r} (accepted: {', '.join('nl.' + n for n in _REDUCERS)})")
    return _REDUCERS[name]
