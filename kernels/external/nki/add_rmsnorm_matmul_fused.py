@nki.jit
def tuned_kernel(x, w, z, g):
    """a = x + z; out = (a / sqrt(mean(a^2) + NORM_EPSILON) * g) . w: see _norm_matmul."""
    return _norm_matmul(x, w, z, g)
