"""`autotune calibrate`: measurements "taken" on a target file with three fitted constants changed (DMA
fixed cost x1.6, access start-up x0.6, launch floor x1.5; simulated with `autotune profile`) are fitted
back within 5% from the starting target (trn2.yaml with the constants at fixed reference values, so that the
test does not move when trn2's own calibration does), from JSON lines and from CSV; the written target file keeps the
source's comments, loads, has another content hash than the source, and a goal runs on it by path. Bad
input is one line naming the file, line and field, exit status 2, before anything is simulated."""
import json
import os
import re
import subprocess

from loop_support import BIN, SOURCE, check, one_error_line, query, tempdir, write_goal

TRN2 = os.path.join(SOURCE, "configs", "targets", "trn2.yaml")
# The round trip starts from these values of trn2's fitted constants (their values before trn2 was fitted on
# its own measurements).
REFERENCE = {"access_startup": 60, "cross_engine_dependency": 100, "fixed_cost_us": 1.3, "efficiency_half_bytes": 1280,
             "launch_overhead_us": 12, "sbuf_partitions_per_instruction": 16}

# Small kernels whose times mix the six constants differently (see tests/unit/kernels/calibrate_test.cpp).
ROWS = [
    ("attention", "flash", {"q_tile": 32, "kv_tile": 128}, {"seq": 512, "q_heads": 2, "kv_heads": 1, "head_dim": 128}, "bf16"),
    ("gemm", "blocked_mnk", {"tile_m": 128, "tile_n": 64, "tiles_in_block_m": 4, "tiles_in_block_n": 8, "tiles_in_block_k": 8},
     {"M": 512, "N": 512, "K": 1024}, "bf16"),
    ("gemm", "blocked_mnk", {"tile_m": 32, "tile_n": 64, "tiles_in_block_m": 8, "tiles_in_block_n": 8, "tiles_in_block_k": 4},
     {"M": 256, "N": 512, "K": 512}, "bf16"),
    ("gemm", "tiled", {"pipeline_depth": 1, "tile_n": 128}, {"M": 256, "N": 512, "K": 512}, "bf16"),
    ("exp", "naive", {}, {"rows": 250, "cols": 512}, "fp32"),
    ("exp", "tiled", {"tile_size": 64, "pipeline_depth": 4}, {"rows": 1024, "cols": 2048}, "fp32"),
    ("add", "tiled", {"tile_size": 128, "pipeline_depth": 1}, {"rows": 1024, "cols": 1024}, "bf16"),
    ("rmsnorm", "naive", {}, {"rows": 256, "cols": 1024}, "fp32"),
    ("rope", "naive", {}, {"seq": 256, "heads": 4, "head_dim": 128}, "bf16"),
    ("attention", "flash_banked", {"kv_tile": 512, "q_tiles": 1, "dma_transpose": 4},
     {"seq": 1024, "q_heads": 2, "kv_heads": 1, "head_dim": 128}, "bf16"),
]


def autotune(*args, timeout=300):
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout, env=env)


def value_of(text, key):
    match = re.search(r"^\s*" + key + r":\s*([0-9.]+)", text, re.M)
    check(match is not None, f"{key} not in the target file")
    return float(match.group(1))


def with_value(text, key, value):
    return re.sub(r"(^\s*" + key + r":\s*)([0-9.]+)", lambda m: m.group(1) + repr(value), text, count=1, flags=re.M)


def main():
    source = open(TRN2).read()
    for key, value in REFERENCE.items():
        source = with_value(source, key, value)
    start = {"access_startup": value_of(source, "access_startup"), "cross_engine_dependency": value_of(source, "cross_engine_dependency"),
             "dma_fixed_cost": value_of(source, "fixed_cost_us"), "dma_efficiency_half_bytes": value_of(source, "efficiency_half_bytes"),
             "launch_overhead": value_of(source, "launch_overhead_us"),
             "dge_partitions_per_instruction": value_of(source, "sbuf_partitions_per_instruction")}
    truth = dict(start, dma_fixed_cost=start["dma_fixed_cost"] * 1.6, access_startup=start["access_startup"] * 0.6,
                 launch_overhead=start["launch_overhead"] * 1.5)
    with tempdir() as tmp:
        start_file = os.path.join(tmp, "start-trn2.yaml")
        open(start_file, "w").write(source)
        hardware = os.path.join(tmp, "hardware.yaml")
        text = with_value(with_value(with_value(source, "fixed_cost_us", truth["dma_fixed_cost"]), "access_startup",
                                     truth["access_startup"]), "launch_overhead_us", truth["launch_overhead"])
        open(hardware, "w").write(text)

        # The "hardware" measurements: each kernel simulated once on the changed target.
        rows = []
        for family, variant, params, shape, dtype in ROWS:
            args = ["profile", "--kernel", family, "--variant", variant, "--target", hardware, "--dtype", dtype,
                    "--shape", ",".join(f"{k}={v}" for k, v in shape.items()), "--no-verify", "--json"]
            for name, value in params.items():
                args += ["--param", f"{name}={value}"]
            proc = autotune(*args)
            check(proc.returncode == 0, f"profile {family}/{variant}: {proc.stderr}")
            latency_ms = json.loads(proc.stdout)["latency_s"] * 1e3
            rows.append({"source": "my trn2", "family": family, "variant": variant, "params": params, "shape": shape,
                         "dtype": dtype, "target": "trn2", "measured_ms": latency_ms})
        measurements = os.path.join(tmp, "measurements.jsonl")
        with open(measurements, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")

        # Fit every constant from the original target: each within 5% of the hardware's.
        out = os.path.join(tmp, "my-trn2.yaml")
        proc = autotune("calibrate", measurements, "--target", start_file, "-o", out, "--json")
        check(proc.returncode == 0, f"calibrate exited {proc.returncode}: {proc.stderr}")
        result = json.loads(proc.stdout)
        fitted = {c["name"]: c["after"] for c in result["constants"]}
        check(set(fitted) == set(truth), f"constants fitted: {sorted(fitted)}")
        for name, value in truth.items():
            check(abs(fitted[name] / value - 1) <= 0.05, f"{name}: fitted {fitted[name]}, hardware {value}")
        check(result["rms_log_before"] > 0.05 and result["rms_log_after"] < 0.01, f"rms: {result['rms_log_before']} -> {result['rms_log_after']}")
        check(result["all_in_band"] and len(result["rows"]) == len(ROWS), "every row within 0.8-1.25 after the fit")
        check(all(r["ratio_after"] == r["after_ms"] / r["measured_ms"] for r in result["rows"]), "ratios")

        # The written file: the source's lines with the values replaced, a provenance header, loadable.
        written = open(out).read()
        check(written.startswith("# Recalibrated by `autotune calibrate`"), written[:200])
        check("measurements.jsonl" in written.splitlines()[0], written[:200])
        for line in source.splitlines():
            if line.strip().startswith("#"):
                check(line in written, f"comment lost: {line!r}")
        for key, name in (("fixed_cost_us", "dma_fixed_cost"), ("access_startup", "access_startup"),
                          ("launch_overhead_us", "launch_overhead")):
            check(abs(value_of(written, key) / truth[name] - 1) <= 0.05, f"{key} in the written file")
        proc = autotune("profile", "--kernel", "exp", "--variant", "naive", "--target", out, "--no-verify", "--json")
        check(proc.returncode == 0 and json.loads(proc.stdout)["status"] == "ok", f"the written target loads: {proc.stderr}")
        check(result["content_hash"] != "" and len(result["content_hash"]) == 16, "content hash")

        # A goal names the written target by path and runs on it.
        goal = write_goal(tmp, "goal.yaml", f"""name: on-my-trn2
kernel: {{family: exp, shape: {{rows: 250, cols: 512}}, dtype: fp32}}
target: {out}
objective: latency
goal: {{improvement: 0.99}}
max_iterations: 1
budget: {{evaluations: 4, wall_time_s: 60}}
search: {{strategy: random, batch_size: 2}}
start: {{variant: naive}}
parallel: 2
seed: 1
""")
        db = os.path.join(tmp, "runs.db")
        proc = autotune("run", goal, "--db", db, "--json")
        check(proc.returncode in (0, 1), f"run on the fitted target: {proc.returncode} {proc.stderr[-1000:]}")
        check(query(db, "SELECT target FROM runs")[0][0].startswith(out), f"the run's target: {query(db, 'SELECT target FROM runs')}")

        # CSV, a subset of the constants, text output with the before/after table; one row measured 3x
        # slower than any constant can explain (say, a mechanism the simulator lacks).
        csv = os.path.join(tmp, "measurements.csv")
        with open(csv, "w") as f:
            f.write("family,variant,params,shape,dtype,target,measured_ms\n")
            for i, row in enumerate(rows):
                kv = lambda d: ";".join(f"{k}={v}" for k, v in d.items())
                measured = row["measured_ms"] * (3 if i == 6 else 1)
                f.write(f"{row['family']},{row['variant']},{kv(row['params'])},{kv(row['shape'])},{row['dtype']},trn2,{measured!r}\n")
        out2 = os.path.join(tmp, "launch-only.yaml")
        proc = autotune("calibrate", csv, "--target", start_file, "-o", out2, "--fit", "launch_overhead_us")
        check(proc.returncode == 0, f"calibrate csv: {proc.stderr}")
        check("measured ms" in proc.stdout and "before ms" in proc.stdout and "after ms" in proc.stdout, proc.stdout)
        check(f"wrote {out2}" in proc.stdout, proc.stdout)
        check(value_of(open(out2).read(), "fixed_cost_us") == start["dma_fixed_cost"], "--fit leaves the others")
        # One constant cannot explain the rows: the rows left outside the band are named with their critical path.
        check("measurements.csv:8 (add/tiled pipeline_depth=1 tile_size=128 rows=1024,cols=1024)" in proc.stderr,
              f"the row outside the band is named: {proc.stderr[-1500:]}")
        check("a missing mechanism, not a constant: the profile's critical path says the path is" in proc.stderr,
              f"warnings: {proc.stderr[-1500:]}")

        # Bad input: one line, exit 2, nothing written.
        bad = os.path.join(tmp, "bad.jsonl")
        nothing = os.path.join(tmp, "never.yaml")

        def bad_file(text, *needles, args=()):
            open(bad, "w").write(text)
            one_error_line(autotune("calibrate", bad, "--target", start_file, "-o", nothing, *args), *needles)
            check(not os.path.exists(nothing), "nothing written on bad input")

        good = json.dumps(rows[4])
        bad_file(good + "\n{oops\n", "bad.jsonl:2", "not a JSON object")
        # A field given twice is refused, as the CSV reader refuses a column given twice; so is a number no double holds.
        bad_file(good[:-1] + ', "measured_ms": 5}\n', "bad.jsonl:1", "the key \"measured_ms\" is given twice")
        bad_file(good[:-1] + ', "seq": 1e400}\n', "bad.jsonl:1", "number overflow")
        bad_file(good.replace('"shape": {', '"shape": {"extra": 18446744073709551615, ') + "\n",
                 "bad.jsonl:1: shape.extra: 18446744073709551615 is out of range")
        bad_file(good + "\n" + good.replace('"variant": "naive"', '"variant": "fast"') + "\n", "bad.jsonl:2: variant: unknown variant 'fast'", "accepted: naive, tiled")
        bad_file(good.replace('"target": "trn2"', '"target": "trn1"') + "\n", "bad.jsonl:1: target: 'trn1' differs from --target ", "(target name 'trn2')")
        bad_file(good.replace('"measured_ms"', '"latency_ms"') + "\n", "bad.jsonl:1: latency_ms: unknown field", "accepted: family")
        bad_file(good.replace('"rows": 250, ', "") + "\n", "bad.jsonl:1: shape.rows: missing")
        bad_file(good + "\n", "--fit: unknown fitted constant 'clock'", "accepted: access_startup", args=("--fit", "clock"))
        open(bad, "w").write("family,variant,shape,dtype,target,measured_ms\nexp,naive,rows=250,fp32,trn2,0.02\n")
        os.rename(bad, bad + ".csv")
        one_error_line(autotune("calibrate", bad + ".csv", "--target", start_file, "-o", nothing), "bad.jsonl.csv:2: shape.cols: missing")
        open(bad + ".csv", "w").write("family,variant,shape,dtype,target,measured_ms\nexp,naive,rows=250;cols=512,fp32,trn2,0x10\n")
        one_error_line(autotune("calibrate", bad + ".csv", "--target", start_file, "-o", nothing),
                       "bad.jsonl.csv:2: measured_ms: '0x10' is not a number of milliseconds")
        # A byte order mark before the header is not part of its first column's name.
        open(bad + ".csv", "wb").write(b"\xef\xbb\xbffamily,variant,shape,dtype,target,measured_ms\nexp,naive,rows=250,fp32,trn2,0.02\n")
        one_error_line(autotune("calibrate", bad + ".csv", "--target", start_file, "-o", nothing), "bad.jsonl.csv:2: shape.cols: missing")
        one_error_line(autotune("calibrate", os.path.join(tmp, "missing.jsonl"), "--target", start_file, "-o", nothing), "missing.jsonl: cannot be read")
        one_error_line(autotune("calibrate", measurements, "--target", "trn9", "-o", nothing), "unknown target 'trn9'")
        one_error_line(autotune("calibrate", measurements, "--target", start_file, "-o", start_file), "is the target file it starts from")
        # Nor the measurements, nor a device: the fitted file is read back from a file before it replaces one.
        with open(measurements) as f:
            kept = f.read()
        one_error_line(autotune("calibrate", measurements, "--target", start_file, "-o", measurements),
                       "is the measurements file")
        check(open(measurements).read() == kept, "a refused -o changed the measurements")
        one_error_line(autotune("calibrate", measurements, "--target", start_file, "-o", "/dev/null"),
                       "-o /dev/null is not a regular file")
        one_error_line(autotune("calibrate", measurements, "--target", start_file), "-o")
    print("ok")


if __name__ == "__main__":
    main()
