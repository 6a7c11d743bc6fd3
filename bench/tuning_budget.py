"""B(p) of a recorded space (../shared/data/tuning/README.md; search/scoring.hpp has the C++ one):
the evaluations random search needs, in expectation, to come a fraction p of the way from the median
to the optimum. Shared by the bench scripts."""
import math
import statistics


def random_search_budget(values, p=0.95, cap=300):
    """B(p) over the valid values (lower is better), capped at `cap` (None: uncapped) and at least 1."""
    w = sorted(values, reverse=True)
    n = len(w)
    f_opt, f_med = w[-1], statistics.median(w)
    threshold = f_opt + (f_med - f_opt) * (1 - p)
    i = next((i for i, v in enumerate(w) if v <= threshold), n - 1)
    b = max(1, math.ceil(i / (n + 1 - i)))
    return b if cap is None else min(cap, b)
