#!/usr/bin/env python3
"""Measure one autotune candidate on a NeuronCore: a command-target program (docs/trainium.md).

For the candidate in AUTOTUNE_PARAMS (the command target sets it; --param NAME=VALUE adds or overrides), it

  1. exports the kernel as NKI with `autotune export --kernel ... --nki` (the family, variant, shape, dtype and
     target come from this program's arguments; a parameter named `variant` picks the variant);
  2. compiles and runs it with the Neuron SDK (Neuron 2.32, NKI 0.6): the kernel is called on numpy inputs under
     `nki.jit`, which compiles it, runs it on the NeuronCore and leaves the NEFF in NKI_ARTIFACTS_DIR. This step
     runs under --nki-python (the NKI environment);
  3. checks the device's output against a float64 numpy reference on fresh random inputs (never zeros), on the
     whole output for element-wise kernels and on randomly sampled rows for attention and GEMM, and that every
     element is finite;
  4. times the NEFF with nrtpy (`NrtpyModel.benchmark(mode="device")`: NeuronCore execution time from
     device-side tracing) in --batches batches of --iters iterations after --warmup warm-up iterations, under
     --nrtpy-python (nrtpy and nki cannot share one environment in Neuron 2.32);
  5. prints one JSON line: latency_s (the median of the batches' mean device times) and the rest.

Compiled kernels are cached under --cache by the exported source, so a candidate's later runs (the command
target's repeats, a measurement again) only time it. A wrong output exits 1 with one line on stderr, so the
candidate is a failed trial saying why; a missing SDK exits 3 with one line saying what is missing."""
import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = {"fp32": 1e-3, "fp16": 1e-2, "bf16": 4e-2}  # largest max relative error accepted, per dtype
SDK_MISSING = 3


def die(message, code=1):
    sys.stderr.write(f"nki_device_bench: {message}\n")
    sys.exit(code)


# ---------------------------------------------------------------- inputs and references (autotune kernels)

def input_shapes(family, s):
    """The kernel's arguments' shapes for shape `s`, in the family's order (as the NKI export takes them)."""
    if family == "exp":
        return [(s["rows"], s["cols"])]
    if family in ("add", "silu_mul"):
        return [(s["rows"], s["cols"])] * 2
    if family == "rmsnorm":
        return [(s["rows"], s["cols"]), (1, s["cols"])]
    if family == "gemm":
        return [(s["K"], s["M"]), (s["K"], s["N"])]
    if family == "transpose":
        return [(s["batch"] * s["rows"], s["cols"])]
    if family == "rope":
        half = s["head_dim"] // 2
        return [(s["seq"], s["heads"] * s["head_dim"]), (s["seq"], half), (s["seq"], half)]
    if family == "attention":
        d = s["head_dim"]
        return [(s["q_heads"] * d, s["seq"]), (s["kv_heads"] * d, s["seq"]), (s["kv_heads"] * s["seq"], d)]
    die(f"no inputs known for kernel family '{family}'", 2)


def reference_rows(np, family, s, x, rows):
    """float64 reference of the output's `rows` (None: all of them), from the families' definitions."""
    if family == "exp":
        out = np.exp(x[0])
    elif family == "add":
        out = x[0] + x[1]
    elif family == "silu_mul":
        out = x[0] / (1.0 + np.exp(-x[0])) * x[1]
    elif family == "rmsnorm":
        out = x[0] / np.sqrt(np.mean(x[0] ** 2, axis=1, keepdims=True) + 1e-6) * x[1]
    elif family == "transpose":
        r = s["rows"]
        out = np.concatenate([x[0][b * r:(b + 1) * r].T for b in range(s["batch"])])
    elif family == "rope":
        half = s["head_dim"] // 2
        out = np.empty_like(x[0])
        for h in range(s["heads"]):
            x1 = x[0][:, h * 2 * half:h * 2 * half + half]
            x2 = x[0][:, h * 2 * half + half:(h + 1) * 2 * half]
            out[:, h * 2 * half:h * 2 * half + half] = x1 * x[1] - x2 * x[2]
            out[:, h * 2 * half + half:(h + 1) * 2 * half] = x2 * x[1] + x1 * x[2]
    elif family == "gemm":
        return np.stack([x[0][:, i] @ x[1] for i in rows])
    elif family == "attention":
        seq, d, group = s["seq"], s["head_dim"], s["q_heads"] // s["kv_heads"]
        out = []
        for row in rows:  # output row = head * seq + query position
            h, i = divmod(int(row), seq)
            g = h // group
            q = x[0][h * d:(h + 1) * d, i]
            k = x[1][g * d:(g + 1) * d, :i + 1]
            scores = q @ k / math.sqrt(d)
            p = np.exp(scores - scores.max())
            out.append((p / p.sum()) @ x[2][g * seq:g * seq + i + 1])
        return np.stack(out)
    else:
        die(f"no reference known for kernel family '{family}'", 2)
    return out if rows is None else out[rows]


def output_rows(family, s):
    """Rows of the output: attention and GEMM are checked on a sample of them."""
    if family == "attention":
        return s["q_heads"] * s["seq"]
    if family == "gemm":
        return s["M"]
    return None


# ---------------------------------------------------------------- bf16 without ml_dtypes

def bf16_round(np, x):
    """float32 values rounded to bfloat16 (round to nearest even), still float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


def bf16_bits(np, x):
    return (np.ascontiguousarray(bf16_round(np, x)).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def device_array(np, x, dtype):
    """A float32 array as the kernel's dtype for nki.jit (bf16 needs ml_dtypes, which the Neuron venvs carry)."""
    if dtype == "fp32":
        return x.astype(np.float32)
    if dtype == "fp16":
        return x.astype(np.float16)
    try:
        import ml_dtypes
    except ImportError:
        die("a bf16 kernel needs ml_dtypes in the NKI environment (pip install ml_dtypes)", SDK_MISSING)
    return bf16_round(np, x).astype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------- stage 1: compile, run once, check

def import_nki():
    try:
        import numpy as np
    except ImportError as e:
        die(f"{sys.executable} cannot import numpy ({e})", SDK_MISSING)
    try:
        import nki  # noqa: F401  (the SDK's compiler front end; the kernel imports its modules itself)
    except ImportError as e:
        die(f"the Neuron SDK is not installed for {sys.executable}: cannot import nki ({e}); on a trn2 instance "
            "activate the NKI environment or pass --nki-python (docs/trainium.md)", SDK_MISSING)
    return np


def stage_compile(args):
    """Runs under the NKI environment: the kernel under nki.jit on the saved inputs, its output and NEFF kept."""
    os.environ["NKI_ARTIFACTS_DIR"] = args.artifacts  # read when nki is imported
    os.environ.setdefault("NEURON_PLATFORM_TARGET_OVERRIDE", args.platform)
    np = import_nki()
    import importlib.util
    spec = importlib.util.spec_from_file_location("autotune_exported_kernel", args.kernel_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, args.kernel_name, None)
    if kernel is None:
        die(f"{args.kernel_file} defines no kernel {args.kernel_name}")
    inputs = np.load(args.inputs)
    arrays = [device_array(np, inputs[f"arg{i}"], args.dtype) for i in range(len(inputs.files))]
    start = time.monotonic()
    out = kernel(*arrays)  # compiles, runs on the NeuronCore, returns the output as numpy
    elapsed = time.monotonic() - start
    np.save(args.output, np.asarray(out).astype(np.float32))
    neffs = [os.path.join(root, f) for root, _, files in os.walk(args.artifacts) for f in files if f.endswith(".neff")]
    if not neffs:
        die(f"the NKI compile left no .neff in {args.artifacts} (NKI_ARTIFACTS_DIR)")
    import inspect
    try:
        names = list(inspect.signature(getattr(kernel, "__wrapped__", kernel)).parameters)[:len(arrays)]
    except (TypeError, ValueError):
        names = []
    json.dump({"neff": neffs[0], "inputs": names, "compile_and_run_s": elapsed}, open(args.manifest, "w"))


# ---------------------------------------------------------------- stage 2: time on the device

def import_nrtpy():
    try:
        import numpy as np
        import nrtpy
    except ImportError as e:
        die(f"the Neuron runtime's Python layer is not installed for {sys.executable}: cannot import nrtpy ({e}); "
            "create the nrtpy environment or pass --nrtpy-python (docs/trainium.md)", SDK_MISSING)
    return np, nrtpy


def stage_time(args):
    """Runs under the nrtpy environment: device-side timing of the NEFF, in batches."""
    np, nrtpy = import_nrtpy()
    NrtpyModel, NrtpyTensor = nrtpy.NrtpyModel, nrtpy.NrtpyTensor
    manifest = json.load(open(args.manifest))
    model = NrtpyModel.load_from_neff(manifest["neff"])
    inputs = np.load(args.inputs)
    arrays = [inputs[f"arg{i}"] for i in range(len(inputs.files))]
    if args.dtype == "bf16":
        arrays = [bf16_bits(np, a) for a in arrays]
    elif args.dtype == "fp16":
        arrays = [a.astype(np.float16) for a in arrays]
    expected = list(model.input_tensors_info.keys())
    names = manifest["inputs"] if sorted(manifest["inputs"]) == sorted(expected) else expected
    if len(names) != len(arrays):
        die(f"the NEFF takes inputs {expected}, the kernel {len(arrays)} arrays")
    tensors = {name: NrtpyTensor.from_numpy(a, name=name) for name, a in zip(names, arrays)}
    means, mins, maxs, stds = [], [], [], []
    for batch in range(args.batches):
        stats = model.benchmark(inputs=tensors, warmup_iter=args.warmup if batch == 0 else 2,
                                benchmark_iter=args.iters, mode="device")
        means.append(stats.mean_ms / 1e3)
        mins.append(stats.min_ms / 1e3)
        maxs.append(stats.max_ms / 1e3)
        stds.append(stats.std_dev_ms / 1e3)
    json.dump({"batch_mean_s": means, "min_s": min(mins), "max_s": max(maxs), "std_s": max(stds)},
              open(args.timing, "w"))


# ---------------------------------------------------------------- the driver

def parse_pairs(pairs):
    out = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not name:
            die(f"--param '{pair}' is malformed (expected NAME=VALUE)", 2)
        out[name] = value
    return out


def find_autotune(given):
    for candidate in (given, os.environ.get("AUTOTUNE_BIN"), os.path.join(HERE, "..", "..", "build", "autotune"),
                      shutil.which("autotune")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    die("cannot find the autotune binary: pass --autotune PATH or set AUTOTUNE_BIN", 2)


def run_stage(python, stage, argv, what):
    proc = subprocess.run([python, os.path.abspath(__file__), "--stage", stage] + argv,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        mine = [line for line in lines if line.startswith("nki_device_bench: ")]
        if mine:  # the stage said why in one line: pass it on as it is
            die(mine[-1][len("nki_device_bench: "):], proc.returncode)
        die(f"{what} failed (exit {proc.returncode}): {lines[-1] if lines else 'no output'}")
    return proc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stage", choices=["compile", "time", "check-nki", "check-nrtpy"], help=argparse.SUPPRESS)
    p.add_argument("--kernel", help="kernel family (autotune kernels)")
    p.add_argument("--variant", default="", help="variant (a parameter named `variant` overrides it)")
    p.add_argument("--shape", default="", help="shape, e.g. seq=8192,q_heads=32,kv_heads=8,head_dim=128")
    p.add_argument("--dtype", default="bf16", choices=sorted(TOLERANCE))
    p.add_argument("--target", default="trn2", help="the simulated target whose constants shape the export")
    p.add_argument("--param", action="append", default=[], help="NAME=VALUE beside AUTOTUNE_PARAMS")
    p.add_argument("--autotune", help="the autotune binary (default: $AUTOTUNE_BIN, build/autotune, PATH)")
    p.add_argument("--nki-python", default=sys.executable, help="Python of the NKI environment (compiles)")
    p.add_argument("--nrtpy-python", default=sys.executable, help="Python of the nrtpy environment (times)")
    p.add_argument("--warmup", type=int, default=10, help="warm-up iterations before timing")
    p.add_argument("--iters", type=int, default=100, help="timed iterations per batch")
    p.add_argument("--batches", type=int, default=5, help="timing batches; latency_s is the median of their means")
    p.add_argument("--tolerance", type=float, help="largest max relative error accepted (default: per dtype)")
    p.add_argument("--check-rows", type=int, default=256, help="output rows checked (attention, GEMM)")
    p.add_argument("--seed", type=int, help="seed of the random inputs (default: fresh)")
    p.add_argument("--cache", default=os.path.join(os.getcwd(), ".nki-device-cache"), help="compiled kernels")
    # internal, between the driver and its stages
    for name in ("kernel-file", "kernel-name", "inputs", "output", "artifacts", "manifest", "timing", "platform"):
        p.add_argument("--" + name, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.stage == "compile":
        return stage_compile(args)
    if args.stage == "time":
        return stage_time(args)
    if args.stage in ("check-nki", "check-nrtpy"):
        import_nki() if args.stage == "check-nki" else import_nrtpy()
        return None
    if not args.kernel or not args.shape:
        die("give --kernel FAMILY and --shape A=1,B=2 (and --dtype): see docs/trainium.md", 2)
    if min(args.warmup, args.iters - 1, args.batches - 1, args.check_rows - 1) < 0:
        die("--warmup must be 0 or more, --iters, --batches and --check-rows 1 or more", 2)
    if args.tolerance is not None and not args.tolerance > 0:
        die(f"--tolerance {args.tolerance:g}: accepted: a relative error above 0", 2)
    # Both interpreters are checked before the export: a wrong timing one must not cost a device compile first.
    # A goal's argv reaches the harness without a shell, so a leading ~ is expanded here.
    for flag in ("nki_python", "nrtpy_python"):
        given = getattr(args, flag)
        setattr(args, flag, shutil.which(os.path.expanduser(given)))
        if getattr(args, flag) is None:
            die(f"--{flag.replace('_', '-')} '{given}' is no executable program; accepted: the Python of the "
                f"{flag.split('_')[0]} environment, as a path or a name on PATH (docs/trainium.md)", 2)
    try:
        import numpy as np
    except ImportError:
        die(f"{sys.executable} cannot import numpy (the reference needs it)", SDK_MISSING)

    try:
        params = json.loads(os.environ.get("AUTOTUNE_PARAMS", "{}") or "{}")
    except ValueError as e:
        die(f"AUTOTUNE_PARAMS is not JSON ({e}); accepted: an object such as {{\"kv_tile\": 2048}}", 2)
    if not isinstance(params, dict):
        die("AUTOTUNE_PARAMS is not a JSON object; accepted: an object such as {\"kv_tile\": 2048}", 2)
    params.update(parse_pairs(args.param))
    variant = str(params.pop("variant", args.variant))
    try:
        shape = {k: int(v) for k, v in parse_pairs(args.shape.split(",")).items()}
    except ValueError:
        die(f"--shape '{args.shape}': every value must be an integer", 2)

    # 1. export
    autotune = find_autotune(args.autotune)
    export = [autotune, "export", "--kernel", args.kernel, "--dtype", args.dtype, "--target", args.target, "--nki",
              "-o", "-"]
    if variant:
        export += ["--variant", variant]
    export += ["--shape", args.shape]
    for name, value in sorted(params.items()):
        export += ["--param", f"{name}={value}"]
    proc = subprocess.run(export, capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"autotune export: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}", 2)
    source = proc.stdout
    digest = hashlib.sha256((source + args.dtype).encode()).hexdigest()[:16]
    work = os.path.join(args.cache, digest)
    os.makedirs(work, exist_ok=True)
    kernel_file = os.path.join(work, "kernel.py")
    with open(kernel_file, "w") as f:
        f.write(source)
    kernel_name = f"{args.kernel}_{exported_variant(source, args.kernel)}_given"

    # 2-3. compile, run once and check (once per compiled kernel: fresh inputs each time it is compiled)
    manifest = os.path.join(work, "manifest.json")
    checked = os.path.join(work, "checked.json")
    inputs_file = os.path.join(work, "inputs.npz")
    if not (os.path.exists(manifest) and os.path.exists(checked)):
        rng = np.random.default_rng(args.seed)
        arrays = []
        for rows, cols in input_shapes(args.kernel, shape):
            a = rng.uniform(-1.0, 1.0, size=(rows, cols)).astype(np.float32)
            if args.dtype == "bf16":  # the values the device sees, so that the reference uses them too
                a = bf16_round(np, a)
            elif args.dtype == "fp16":
                a = a.astype(np.float16).astype(np.float32)
            arrays.append(a)
        # Both environments are checked before the compile, which takes minutes on a device.
        run_stage(args.nki_python, "check-nki", [], "checking the NKI environment")
        run_stage(args.nrtpy_python, "check-nrtpy", [], "checking the nrtpy environment")
        np.savez(inputs_file, **{f"arg{i}": a for i, a in enumerate(arrays)})
        output_file = os.path.join(work, "output.npy")
        artifacts = os.path.join(work, "artifacts")
        shutil.rmtree(artifacts, ignore_errors=True)
        os.makedirs(artifacts)
        run_stage(args.nki_python, "compile",
                  ["--kernel-file", kernel_file, "--kernel-name", kernel_name, "--inputs", inputs_file,
                   "--output", output_file, "--artifacts", artifacts, "--manifest", manifest + ".new",
                   "--dtype", args.dtype, "--platform", args.target if args.target in ("trn1", "trn2", "trn3")
                   else "trn2"],
                  "compiling and running the kernel")
        got = np.load(output_file).astype(np.float64)
        x = [arrays[i].astype(np.float64) for i in range(len(arrays))]
        if not np.isfinite(got).all():
            die(f"wrong answer: {int((~np.isfinite(got)).sum())} output elements are NaN or infinite")
        total = output_rows(args.kernel, shape)
        rows = None if total is None else np.sort(rng.choice(total, size=min(args.check_rows, total), replace=False))
        want = reference_rows(np, args.kernel, shape, x, rows)
        got_rows = got if rows is None else got.reshape(total, -1)[rows]
        if got_rows.shape != want.shape:
            die(f"wrong answer: output shape {got.shape}, the reference's {want.shape}")
        error = float(np.max(np.abs(got_rows - want)) / max(float(np.max(np.abs(want))), 1e-30))
        cosine = float(np.sum(got_rows * want) / math.sqrt(float(np.sum(got_rows ** 2) * np.sum(want ** 2)) or 1e-300))
        tolerance = args.tolerance if args.tolerance is not None else TOLERANCE[args.dtype]
        if not error <= tolerance:
            die(f"wrong answer: max relative error {error:.3g} > tolerance {tolerance:g} ({args.dtype}), "
                f"cosine {cosine:.6f}, on {'all' if rows is None else len(rows)} output rows")
        os.replace(manifest + ".new", manifest)
        json.dump({"max_rel_error": error, "cosine": cosine, "rows_checked": None if rows is None else len(rows)},
                  open(checked, "w"))

    # 4. time
    timing = os.path.join(work, f"timing-{os.getpid()}.json")
    run_stage(args.nrtpy_python, "time",
              ["--manifest", manifest, "--inputs", inputs_file, "--timing", timing, "--dtype", args.dtype,
               "--warmup", str(args.warmup), "--iters", str(args.iters), "--batches", str(args.batches)],
              "timing the kernel")
    t = json.load(open(timing))
    os.remove(timing)
    check = json.load(open(checked))
    compiled = json.load(open(manifest))
    means = sorted(t["batch_mean_s"])
    median = means[len(means) // 2] if len(means) % 2 else (means[len(means) // 2 - 1] + means[len(means) // 2]) / 2
    print(json.dumps({"latency_s": median, "batch_mean_s": t["batch_mean_s"], "device_min_s": t["min_s"],
                      "device_max_s": t["max_s"], "device_std_s": t["std_s"], "batches": args.batches,
                      "iterations": args.iters, "warmup": args.warmup, "max_rel_error": check["max_rel_error"],
                      "cosine": check["cosine"], "compile_and_run_s": compiled.get("compile_and_run_s"),
                      "kernel": digest}))


def exported_variant(source, family):
    """The variant the export wrote: its kernel is named FAMILY_VARIANT_given."""
    marker = f"def {family}_"
    for line in source.splitlines():
        if line.startswith(marker) and "_given(" in line:
            return line[len(marker):line.index("_given(")]
    die("the export names no kernel function")


if __name__ == "__main__":
    main()
