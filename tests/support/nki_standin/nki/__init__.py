"""Strict stand-in for the current NKI (`import nki`, NKI 0.6 in Neuron 2.32), for tests only: not the Neuron
compiler, not nki.simulate. It runs an exported kernel eagerly on numpy and checks every call against the
documented API (see _core.py): signatures, partition counts, PSUM banks and dtypes, instruction rules."""
import functools

import numpy as np

from . import isa, language  # noqa: F401  (import nki.isa as nisa; import nki.language as nl)
from ._core import NkiRuleError, documented, traced_instructions  # noqa: F401

_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}


@documented("nki")
def jit(fn=None, **kwargs):
    """Runs the kernel eagerly: numpy inputs become HBM tensors (a float32 array stands for an input of the dtype
    named by the array's `nki_dtype` attribute when it has one, since numpy has no bfloat16), the returned
    HBM tensor comes back as a float32 array."""

    @functools.wraps(fn)
    def run(*args):
        language._reset()
        tensors = [language._hbm_input(np.asarray(a, dtype=np.float32), getattr(a, "nki_dtype", None) or
                                       _DTYPES.get(np.asarray(a).dtype, "float32"))
                   if isinstance(a, np.ndarray) else a for a in args]
        out = fn(*tensors)
        if not isinstance(out, language.Tensor) or out.buffer not in ("hbm", "shared_hbm"):
            raise NkiRuleError(f"the kernel returned {out!r}, not an HBM tensor")
        return out.read().copy()

    return run
