#!/usr/bin/env python3
"""`autotune profile` and `autotune kernels` driven through the real binary.

Checks the issue's profile command with --json and --trace (the summary fields
of NEURONCORE.md, validity, verification, a Perfetto trace with one track per
engine and per DMA queue), the text report, an invalid configuration reported
as data, and bad input exiting non-zero with one line naming what is accepted.
"""
import json
import os
import subprocess
import sys
import tempfile

BIN = os.environ.get("AUTOTUNE_BIN", "build/autotune")
failures = []


def run(*args, env=None):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})


def one_line(r, args, expected):
    """Bad input: exit 2, one line on stderr holding every expected part, nothing on stdout."""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    check(r.returncode == 2, f"{args}: exit {r.returncode}")
    check(len(lines) == 1, f"{args}: one line on stderr, got {lines}")
    for part in expected:
        check(part in r.stderr, f"{args}: '{part}' in {r.stderr.strip()!r}")
    check(r.stdout.strip() == "", f"{args}: nothing on stdout")


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message, file=sys.stderr)


def profile_json_and_trace():
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "gemm.json")
        r = run("profile", "--kernel", "gemm", "--variant", "blocked_mnk", "--target", "trn1", "--shape",
                "M=4096,N=8192,K=8192", "--dtype", "bf16", "--param", "unroll_factor=2", "--trace", trace_path,
                "--json")
        check(r.returncode == 0, f"profile exited {r.returncode}: {r.stderr.strip()}")
        out = json.loads(r.stdout)
        check(out["valid"] is True, "the fully blocked GEMM fits trn1")
        check(out["status"] == "ok", f"status {out['status']}")
        check(out["kernel"] == "gemm" and out["variant"] == "blocked_mnk", "kernel and variant echoed")
        check(out["shape"] == {"M": 4096, "N": 8192, "K": 8192}, f"shape {out['shape']}")
        check(out["shape_source"] == "given", f"shape_source {out.get('shape_source')}")
        check(out["dtype"] == "bf16", "dtype echoed")
        check(out["params"]["unroll_factor"] == 2, "the given parameter is used")
        check(out["params"]["tiles_in_block_m"] == 16 and out["params"]["tiles_in_block_k"] == 8,
              "parameters not given take the tutorial's defaults")
        summary = out["summary"]
        for key in ["total_time", "neuroncore_cycle_count", "mfu_estimated_percent", "mbu_estimated_percent",
                    "tensor_engine_active_time_percent", "vector_engine_active_time_percent",
                    "scalar_engine_active_time_percent", "gpsimd_engine_active_time_percent",
                    "dma_active_time_percent", "hbm_read_bytes", "hbm_write_bytes", "dma_transfer_count",
                    "dma_transfer_average_bytes", "sbuf_peak_bytes_per_partition"]:
            check(key in summary, f"summary has {key}")
        check(0.001 < summary["total_time"] < 0.1, f"total_time in seconds: {summary['total_time']}")
        check(0 < summary["mfu_estimated_percent"] <= 100, "MFU is a percentage")
        check(summary["hbm_write_bytes"] == 4096 * 8192 * 2, "the result is written once")
        check(out["latency_s"] >= out["roofline_bound_s"] > 0, "not faster than the roofline")
        v = out["verification"]
        check(v["ran"] and v["passed"], f"verification passed: {v}")
        for key in ["max_rel_error", "mse", "cosine_similarity", "shape"]:
            check(key in v, f"verification has {key}")
        check(len(out["hot_lines"]) == 5, "five hottest source lines")
        check(all("gemm.hpp" in h["file"] for h in out["hot_lines"][:1]), "the hottest line is kernel source")
        path = out["summary"]["critical_path"]
        shares = sum(path["busy_percent"].values()) + sum(path["wait_percent"].values())
        check(abs(shares - 100) < 1e-3, f"the critical path's shares add up to 100: {shares}")
        waiting = sum(path["waiting_percent"].values())
        check(abs(waiting - sum(path["wait_percent"].values())) < 1e-3, f"waits by engine add up: {waiting}")
        reached = sum(path["reached_by_percent"].values())
        check(abs(reached - 100) < 1e-3, f"the path by how it was reached adds up to 100: {reached}")
        check(abs(path["length_s"] - out["summary"]["kernel_time"]) < 1e-12, "the path is the kernel time")
        # The fully blocked GEMM is tensor-engine bound: its matmuls carry the path.
        busiest = max(path["busy_percent"], key=path["busy_percent"].get)
        check(busiest == "tensor" and path["busy_percent"]["tensor"] > 50, f"tensor carries the path: {path}")
        check(all("gemm.hpp:" in line["source"] for line in path["lines"]), f"path lines name the kernel: {path}")

        with open(trace_path) as f:
            trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        tracks = {e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
        for engine in ["tensor", "vector", "scalar", "gpsimd"]:
            check(any(engine in t for t in tracks), f"a track for the {engine} engine")
        dma_tracks = [t for t in tracks if "dma" in t.lower()]
        check(len(dma_tracks) == 16, f"one track per DMA queue, got {len(dma_tracks)}")
        check(sum(1 for e in events if e.get("ph") == "X") > 1000, "instruction slices in the trace")


def profile_text():
    r = run("profile", "--kernel", "exp")
    check(r.returncode == 0, f"profile --kernel exp exited {r.returncode}: {r.stderr.strip()}")
    text = r.stdout
    check("exp / naive" in text, "the baseline variant is the default")
    check("rows=250,cols=512" in text, "the default shape is the profiler example")
    check(text.startswith("no --shape given: exp runs at its default shape rows=250,cols=512"),
          f"the default shape is said to be one:\n{text[:200]}")
    check("exp.hpp:" in text, "hot lines name the kernel source")
    check("DMA lines on many queues can pass 100 %" in text, "the hot lines' shares say what they sum")
    check("verification    passed" in text, "verification figures printed")
    check("roofline bound" in text, "roofline bound printed")
    for line in ("critical path    ", "  busy           dma ", "  waiting        ", "  waits by kind  ",
                 "  reached by     ", "  top lines    "):
        check(line in text, f"the critical path printed ({line.strip()!r}):\n{text}")


def invalid_is_data():
    r = run("profile", "--kernel", "exp", "--variant", "naive", "--shape", "rows=4096,cols=8192", "--json")
    check(r.returncode == 1, f"an invalid configuration exits 1, got {r.returncode}")
    out = json.loads(r.stdout)
    r = run("profile", "--kernel", "exp", "--json", "--no-verify")
    check(json.loads(r.stdout).get("shape_source") == "default", "--json says the shape is the default")
    check(out["valid"] is False and out["status"] == "invalid", "reported invalid")
    check(out["latency_s"] is None, f"an invalid candidate has no latency: {out['latency_s']}")
    check(out.get("rule") == "sbuf_overflow", f"rule {out.get('rule')}")
    check("exp.hpp" in out.get("error", ""), "the error names the kernel source line")
    # --trace of an invalid candidate: nothing written, and stderr says so and why.
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.json")
        r = run("profile", "--kernel", "exp", "--variant", "naive", "--shape", "rows=4096,cols=8192", "--trace", trace)
        check(r.returncode == 1 and not os.path.exists(trace), f"invalid with --trace: exit {r.returncode}")
        check(f"no trace written to {trace}: the candidate is invalid (sbuf_overflow" in r.stderr,
              f"the missing trace is explained: {r.stderr!r}")


def bad_input():
    cases = [
        (["--kernel", "softmaxx"], ["unknown kernel 'softmaxx'", "gemm"]),
        (["--kernel", "gemm", "--variant", "fast"], ["unknown variant 'fast'", "blocked_mnk"]),
        (["--kernel", "gemm", "--param", "tile=3"], ["unknown parameter 'tile'", "tile_m"]),
        (["--kernel", "gemm", "--variant", "blocked_mnk", "--param", "unroll_factor=3"],
         ["unroll_factor", "accepted: 1, 2, 4"]),
        (["--kernel", "gemm", "--param", "unroll_factor"], ["NAME=VALUE"]),
        (["--kernel", "gemm", "--target", "trn9"], ["trn9", "trn1"]),
        (["--kernel", "gemm", "--shape", "M=4096;N=2"], ["shape", "NAME=VALUE"]),
        (["--kernel", "gemm", "--shape", "Q=2"], ["unknown shape argument 'Q'", "M, N, K"]),
        # A shape in part is never completed from the default (K forgotten is not K=8192).
        (["--kernel", "gemm", "--shape", "M=1024,N=1024"],
         ["shape 'M=1024,N=1024' is missing K", "the shape arguments of gemm are M, N, K"]),
        (["--kernel", "attention", "--shape", "seq=2048"], ["missing q_heads, kv_heads, head_dim"]),
        (["--kernel", "gemm", "--dtype", "fp64"], ["dtype 'fp64'", "bf16"]),
        (["--kernel", "gemm", "--dtype", "float8_e5m2"],
         ["dtype 'float8_e5m2'", "fp8 is supported by trn2 hardware but not modelled by this simulator",
          "accepted: bf16"]),
        # every value in its domain, but together they break a declared constraint
        (["--kernel", "gemm", "--variant", "blocked_mn", "--param", "unroll_factor=4"],
         ["violate constraint 'unroll_factor <= tiles_in_block_n'", "blocked_mn", "tiles_in_block_n=2"]),
    ]
    for args, expected in cases:
        one_line(run("profile", *args), args, expected)


def kernel_source_bad_input():
    """--kernel-source: a path that is no file is refused before compiling (nothing left in the kernel
    cache); flags the compiled kernel does not take are bad input as they are for --kernel."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"AUTOTUNE_CACHE_DIR": os.path.join(tmp, "cache")}
        for path, expected in ((os.path.join(tmp, "missing.cc"), "no such file"), (tmp, "is a folder")):
            one_line(run("profile", "--kernel-source", path, env=env), [path], [f"--kernel-source {path}: {expected}"])
        cache = os.path.join(tmp, "cache")
        left = [f for _, _, files in os.walk(cache) for f in files] if os.path.isdir(cache) else []
        check(left == [], f"a refused path left files in the kernel cache: {left}")

        source = os.path.join(tmp, "gemm.cc")
        r = run("export", "--kernel", "gemm", "--variant", "blocked_mnk", "-o", source)
        check(r.returncode == 0, f"export: {r.stderr}")
        cases = [
            (["--param", "unroll_factor=3"], ["value 3 of parameter 'unroll_factor'", "accepted: 1, 2, 4"]),
            (["--param", "nope=3"], ["unknown parameter 'nope'", "unroll_factor"]),
            (["--dtype", "fp64"], ["dtype 'fp64'", "bf16"]),
            (["--target", "trn9"], ["trn9", "trn1"]),
        ]
        for args, expected in cases:
            one_line(run("profile", "--kernel-source", source, "--shape", "M=256,N=512,K=512", *args, env=env),
                     args, expected)

        # An invalid candidate: no latency, and --trace says why it wrote nothing.
        exp = os.path.join(tmp, "exp.cc")
        check(run("export", "--kernel", "exp", "--variant", "naive", "-o", exp).returncode == 0, "export exp")
        trace = os.path.join(tmp, "t.json")
        r = run("profile", "--kernel-source", exp, "--shape", "rows=4096,cols=8192", "--trace", trace, "--json",
                env=env)
        check(r.returncode == 1 and json.loads(r.stdout)["latency_s"] is None, f"invalid source: {r.stdout[:300]}")
        check(not os.path.exists(trace) and "no trace written to" in r.stderr, f"trace: {r.stderr!r}")


def kernels_listing():
    r = run("kernels", "--json")
    check(r.returncode == 0, "kernels --json exits 0")
    families = {k["name"]: k for k in json.loads(r.stdout)["kernels"]}
    for name in ["exp", "gemm", "rmsnorm"]:
        check(name in families, f"family {name} listed")
    variants = [v["name"] for v in families["gemm"]["variants"]]
    check(variants == ["tiled", "hoisted", "blocked_mn", "blocked_mnk"], f"gemm variants {variants}")
    mnk = next(v for v in families["gemm"]["variants"] if v["name"] == "blocked_mnk")
    unroll = next(p for p in mnk["params"] if p["name"] == "unroll_factor")
    check(unroll["values"] == [1, 2, 4] and unroll["default"] == 1, "domains and defaults listed")
    r = run("kernels")
    check(r.returncode == 0 and "blocked_mnk" in r.stdout and "pipeline_depth" in r.stdout, "text listing")


if __name__ == "__main__":
    profile_json_and_trace()
    profile_text()
    invalid_is_data()
    bad_input()
    kernel_source_bad_input()
    kernels_listing()
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("ok")
