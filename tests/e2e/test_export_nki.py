"""`autotune export RUN [TRIAL] --nki` writes an NKI kernel that computes what its family's reference computes.

Each case tunes nothing: a one-evaluation run measures one configuration of a variant (parameters chosen off
their defaults, shapes ragged), `export --nki` writes it, and the kernel runs under the numpy stand-in of the
nki modules (tests/support/nki_standin, NOT the Neuron compiler) at the export's VERIFICATION_SHAPE. Its
output must match a float64 numpy reference written here, independently of the C++ reference."""
import importlib.util
import os
import sys

try:
    import numpy as np
except ImportError:  # the interpreter CTest found has no numpy: Debian's has python3-numpy (scripts/setup.sh --all)
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("FAIL: numpy is missing; scripts/setup.sh --all installs python3-numpy")
    sys.exit(1)

from loop_support import SOURCE, check, fail, query, run, tempdir, write_goal

STANDIN = os.path.join(SOURCE, "tests", "support", "nki_standin")

# family, variant, shape, dtype, parameters (off their defaults where it matters)
CASES = [
    ("exp", "naive", "[250, 515]", "fp32", {}),
    ("exp", "tiled", "[250, 515]", "fp32", {"tile_size": 128, "unroll_factor": 2, "pipeline_depth": 3}),
    ("add", "naive", "[200, 300]", "bf16", {}),
    ("add", "tiled", "[300, 260]", "fp32", {"tile_size": 128, "unroll_factor": 2, "engine": 2}),
    ("silu_mul", "naive", "[130, 200]", "fp32", {}),
    ("silu_mul", "tiled", "[520, 300]", "fp32", {"tile_size": 256, "unroll_factor": 4, "engine": 1}),
    ("rmsnorm", "naive", "[200, 300]", "fp32", {}),
    ("rmsnorm", "fused", "[300, 300]", "fp32", {"tile_size": 128, "unroll_factor": 2, "pipeline_depth": 3}),
    ("gemm", "tiled", "{M: 200, N: 300, K: 160}", "fp32",
     {"tile_m": 64, "tile_n": 128, "tile_k": 64, "unroll_factor": 2}),
    ("gemm", "hoisted", "{M: 200, N: 300, K: 160}", "fp32", {"tile_m": 128, "tile_n": 64, "tile_k": 128}),
    ("gemm", "blocked_mn", "{M: 300, N: 700, K: 200}", "fp32",
     {"tile_m": 64, "tile_n": 128, "tile_k": 128, "tiles_in_block_m": 2, "tiles_in_block_n": 2,
      "unroll_factor": 2}),
    ("gemm", "blocked_mnk", "{M: 300, N: 700, K: 300}", "fp32",
     {"tile_m": 64, "tile_n": 128, "tile_k": 64, "tiles_in_block_m": 2, "tiles_in_block_n": 2,
      "tiles_in_block_k": 2, "unroll_factor": 2}),
    ("transpose", "naive", "{batch: 2, rows: 200, cols: 150}", "fp32", {}),
    ("transpose", "pe", "{batch: 2, rows: 300, cols: 290}", "fp32",
     {"tile_size": 256, "blocks_per_bank": 2, "evacuate_engine": 1}),
    ("transpose", "dma", "{batch: 2, rows: 300, cols: 150}", "bf16", {"tile_size": 256}),
    ("rope", "naive", "{seq: 200, heads: 3, head_dim: 64}", "fp32", {}),
    ("rope", "wide", "{seq: 300, heads: 3, head_dim: 64}", "fp32",
     {"unroll_factor": 2, "engine_split": 1, "gather_by_dma": 1, "pipeline_depth": 3}),
    ("rope", "wide", "{seq: 200, heads: 5, head_dim: 32}", "fp32", {"gather_by_dma": 0, "engine_split": 0}),
    ("attention", "flash_banked", "{seq: 700, q_heads: 4, kv_heads: 2, head_dim: 64}", "fp32",
     {"kv_tile": 512, "q_tiles": 2, "dma_transpose": 2, "stats_on_gpsimd": 1, "evacuate_on_scalar": 1}),
    # Score matmuls on two PE row tiles side by side (nc_matmul tile_position / tile_size), a ragged bank.
    ("attention", "flash_banked", "{seq: 1300, q_heads: 2, kv_heads: 2, head_dim: 64}", "bf16",
     {"kv_tile": 2048, "q_tiles": 2, "pe_row_tiles": 2}),
    ("attention", "naive", "{seq: 300, q_heads: 4, kv_heads: 2, head_dim: 64}", "fp32", {}),
    ("attention", "flash", "{seq: 700, q_heads: 4, kv_heads: 1, head_dim: 64}", "fp32",
     {"kv_tile": 256, "q_tile": 64, "unroll_factor": 2, "pipeline_depth": 3}),
    ("attention", "flash", "{seq: 500, q_heads: 2, kv_heads: 2, head_dim: 128}", "bf16",
     {"kv_tile": 512, "q_tile": 128, "pipeline_depth": 1}),
    ("attention", "flash_banked", "{seq: 1100, q_heads: 2, kv_heads: 2, head_dim: 128}", "bf16",
     {"kv_tile": 1024, "q_tiles": 4, "dma_transpose": 0, "pipeline_depth": 3}),
    ("attention", "cte", "{seq: 700, q_heads: 4, kv_heads: 2, head_dim: 64}", "fp32",
     {"kv_tile": 512, "q_grps_per_load": 2, "pipeline_depth": 3}),
    ("attention", "cte", "{seq: 1100, q_heads: 2, kv_heads: 2, head_dim: 128}", "bf16",
     {"kv_tile": 1024, "q_grps_per_load": 4}),
]

# Shapes run besides the verification shape: naive attention's scores leave SBUF for HBM past about 1.6K
# keys (trn1), a path the small verification shape does not take.
EXTRA_SHAPES = {("attention", "naive"): [{"seq": 1800, "q_heads": 2, "kv_heads": 1, "head_dim": 64}]}


def inputs_for(family, s, rng):
    """The kernel's arguments for shape `s`, in the family's order."""
    def rand(rows, cols, low=-1.0, high=1.0):
        return rng.uniform(low, high, size=(rows, cols)).astype(np.float32)

    if family == "exp":
        return [rand(s["rows"], s["cols"], -3, 3)]
    if family in ("add", "silu_mul"):
        return [rand(s["rows"], s["cols"]), rand(s["rows"], s["cols"])]
    if family == "rmsnorm":
        return [rand(s["rows"], s["cols"]), rand(1, s["cols"])]
    if family == "gemm":
        return [rand(s["K"], s["M"]), rand(s["K"], s["N"])]
    if family == "transpose":
        return [rand(s["batch"] * s["rows"], s["cols"])]
    if family == "rope":
        return [rand(s["seq"], s["heads"] * s["head_dim"]), rand(s["seq"], s["head_dim"] // 2),
                rand(s["seq"], s["head_dim"] // 2)]
    if family == "attention":
        d = s["head_dim"]
        return [rand(s["q_heads"] * d, s["seq"]), rand(s["kv_heads"] * d, s["seq"]),
                rand(s["kv_heads"] * s["seq"], d)]
    fail(f"no inputs for {family}")


def reference(family, s, args):
    """float64 numpy, from the families' definitions (autotune kernels)."""
    x = [np.asarray(a, dtype=np.float64) for a in args]
    if family == "exp":
        return np.exp(x[0])
    if family == "add":
        return x[0] + x[1]
    if family == "silu_mul":
        return x[0] / (1.0 + np.exp(-x[0])) * x[1]
    if family == "rmsnorm":
        return x[0] / np.sqrt(np.mean(x[0] ** 2, axis=1, keepdims=True) + 1e-6) * x[1]
    if family == "gemm":
        return x[0].T @ x[1]
    if family == "transpose":
        rows = s["rows"]
        return np.concatenate([x[0][b * rows:(b + 1) * rows].T for b in range(s["batch"])])
    if family == "rope":
        half = s["head_dim"] // 2
        out = np.empty_like(x[0])
        for h in range(s["heads"]):
            x1 = x[0][:, h * 2 * half:h * 2 * half + half]
            x2 = x[0][:, h * 2 * half + half:(h + 1) * 2 * half]
            out[:, h * 2 * half:h * 2 * half + half] = x1 * x[1] - x2 * x[2]
            out[:, h * 2 * half + half:(h + 1) * 2 * half] = x2 * x[1] + x1 * x[2]
        return out
    if family == "attention":
        seq, d, group = s["seq"], s["head_dim"], s["q_heads"] // s["kv_heads"]
        out = np.empty((s["q_heads"] * seq, d))
        causal = np.tril(np.ones((seq, seq), dtype=bool))
        for h in range(s["q_heads"]):
            g = h // group
            q, k = x[0][h * d:(h + 1) * d].T, x[1][g * d:(g + 1) * d].T
            scores = np.where(causal, q @ k.T / np.sqrt(d), -np.inf)
            p = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[h * seq:(h + 1) * seq] = (p / p.sum(axis=1, keepdims=True)) @ x[2][g * seq:(g + 1) * seq]
        return out
    fail(f"no reference for {family}")


def goal_text(family, variant, shape, dtype, params):
    params_text = ", ".join(f"{k}: {v}" for k, v in params.items())
    return f"""name: nki-{family}-{variant}
kernel: {{family: {family}, shape: {shape}, dtype: {dtype}}}
start: {{variant: {variant}, params: {{{params_text}}}}}
max_iterations: 1
budget: {{evaluations: 1}}
"""


def load_module(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    sys.path.insert(0, STANDIN)
    rng = np.random.default_rng(7)
    with tempdir() as tmp:
        db = os.path.join(tmp, "nki.db")
        for number, (family, variant, shape, dtype, params) in enumerate(CASES, start=1):
            label = f"{family}/{variant} {params}"
            goal = write_goal(tmp, f"g{number}.yaml", goal_text(family, variant, shape, dtype, params))
            proc = run(["run", goal], db)
            check(proc.returncode == 0, f"{label}: run exited {proc.returncode}: {proc.stderr[-1500:]}")
            run_id = query(db, "SELECT max(id) FROM runs")[0][0]
            trial = query(db, "SELECT id FROM trials WHERE run = ? ORDER BY id LIMIT 1", (run_id,))[0][0]
            path = os.path.join(tmp, f"k{number}.py")
            proc = run(["export", str(run_id), str(trial), "--nki", "-o", path], db)
            check(proc.returncode == 0, f"{label}: export exited {proc.returncode}: {proc.stderr}")
            text = open(path).read()
            check("@nki.jit" in text and "import neuronxcc.nki.language as nl" in text, f"{label}: not an NKI kernel")
            for name, value in params.items():
                check(f"{name.upper()} = {value}  #" in text, f"{label}: {name} = {value} missing from the header")
            check(f"run {run_id} (goal nki-{family}-{variant}" in text and "Usage" in text,
                  f"{label}: the header lacks the run or the usage example")
            module = load_module(path)
            kernel = getattr(module, f"{family}_{variant}_run{run_id}_trial{trial}")
            for s in [module.VERIFICATION_SHAPE] + EXTRA_SHAPES.get((family, variant), []):
                args = inputs_for(family, s, rng)
                got = np.asarray(kernel(*args), dtype=np.float64)
                want = reference(family, s, args)
                check(got.shape == want.shape, f"{label}: output shape {got.shape}, expected {want.shape}")
                check(np.isfinite(got).all(), f"{label}: the output has unwritten (NaN) or infinite elements")
                error = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30)
                cosine = float(np.sum(got * want) / np.sqrt(np.sum(got * got) * np.sum(want * want)))
                check(error < 1e-4 and cosine > 0.99999,
                      f"{label}: max error {error:.3g}, cosine {cosine:.6f} at {s}")
                print(f"{label}: {s} max error {error:.2g}")
    print("ok")


if __name__ == "__main__":
    main()
