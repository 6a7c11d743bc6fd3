"""Stand-in for neuronxcc.nki (tests only; see neuronxcc/__init__.py)."""
import functools

import numpy as np

from . import isa, language  # noqa: F401  (import neuronxcc.nki.language as nl works either way)


def jit(kernel):
    """Runs the kernel eagerly on numpy arrays: inputs are copied to float32 HBM tensors, outputs returned."""

    @functools.wraps(kernel)
    def run(*args, **kwargs):
        tensors = [np.array(a, dtype=np.float32) if isinstance(a, np.ndarray) else a for a in args]
        return kernel(*tensors, **kwargs)

    return run
