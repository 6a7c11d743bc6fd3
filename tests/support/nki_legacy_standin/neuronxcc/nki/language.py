"""Stand-in for neuronxcc.nki.language (tests only; see neuronxcc/__init__.py).

Tensors are numpy float32 arrays; new SBUF, PSUM and HBM tensors are filled with NaN, so a kernel that reads
memory it never wrote produces NaN and fails its comparison with the reference."""
import numpy as np

float32, bfloat16, float16 = "float32", "bfloat16", "float16"
sbuf, psum, hbm, shared_hbm = "sbuf", "psum", "hbm", "shared_hbm"


class tile_size:  # noqa: N801  (the real module's name)
    pmax = 128
    psum_fmax = 512


def par_dim(size):
    return size


def ndarray(shape, dtype, buffer=sbuf):
    return np.full(tuple(shape), np.nan, dtype=np.float32)


def zeros(shape, dtype, buffer=sbuf):
    return np.zeros(tuple(shape), dtype=np.float32)


def arange(n):
    return np.arange(n)


def affine_range(n):
    return range(n)


sequential_range = static_range = affine_range


def load(src, dtype=None):
    return np.array(src, dtype=np.float32)


def store(dst, value):
    dst[...] = np.broadcast_to(value, dst.shape)


# Activation functions (nisa.activation's op) and ALU operators (op0, op1, reduce_op).
def exp(x):
    return np.exp(x)


def silu(x):
    return x / (1.0 + np.exp(-x))


def square(x):
    return x * x


def sqrt(x):
    return np.sqrt(x)


def rsqrt(x):
    return 1.0 / np.sqrt(x)


def copy(x):
    return np.array(x, dtype=np.float32)


add, subtract, multiply, maximum = np.add, np.subtract, np.multiply, np.maximum
max = np.maximum  # noqa: A001  (as a reduce_op: the maximum)
