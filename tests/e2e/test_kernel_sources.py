"""Kernel sources in and out: export a tuned trial, compile it back with
`profile --kernel-source` (same cycles as recorded), compile errors (in
profile, and in a goal: a failed trial with the compiler's message), crashing
and hanging kernels in a goal run, a kernel with its own reference tuned by a
goal without a family, a kernel that hangs while loading (killed within the
timeout), and compiling against an installed API."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = os.environ["AUTOTUNE_BIN"]
SOURCE = Path(os.environ["AUTOTUNE_SOURCE_DIR"])


def run(args, env, cwd, check=None):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    if check is not None and p.returncode != check:
        sys.exit(f"FAIL: {args} exited {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def fail(message):
    sys.exit("FAIL: " + message)


BAD_KERNEL = r'''
#include <csignal>

#include "kernels/external/user_kernel.hpp"
#include "kernels/families/exp.hpp"
#include "kernels/families/family_support.hpp"

using namespace autotune::kernels;

// exp in column tiles; `mode` 1 crashes (SIGSEGV), 2 never returns.
AUTOTUNE_USER_KERNEL(exp_faulty) {
  kernel.family = "exp";
  kernel.params = {{"tile_size", "columns per tile", {128, 256, 512}, 512, ParamRole::tile},
                   {"mode", "0 works, 1 segfaults, 2 loops forever", {0, 1, 2}, 0}};
  kernel.trace = [](Kernel& k, const Shape& s, Dtype dtype, const ParamValues& p) {
    if (p.at("mode") == 1) std::raise(SIGSEGV);
    if (p.at("mode") == 2)
      for (volatile unsigned spin = 0;; spin = spin + 1u) {
      }
    const ExpShape shape{int_arg(s, "rows"), int_arg(s, "cols")};
    const ExpTiledParams params{int_param(p, "tile_size"), 2, 1};
    dispatch_dtype(dtype, [&]<Dtype D>() { exp_tiled<D>(k, shape, params); });
  };
}
'''

#exp over a[height, width] tensor that describes itself(no family) and is
#verified against its own reference, SCALE* exp(x).
OWN_KERNEL = r'''
#include <cmath>

#include "kernels/external/user_kernel.hpp"
#include "kernels/families/exp.hpp"
#include "kernels/families/family_support.hpp"

using namespace autotune::kernels;

AUTOTUNE_USER_KERNEL(own_exp) {
  kernel.description = "exp in column tiles, with its own reference";
  kernel.params = {
      {"tile_size", "columns per tile", {128, 256, 512}, 512, ParamRole::tile},
      {"pipeline_depth", "rotating buffers per stream", {1, 2, 3}, 1, ParamRole::pipeline_depth}};
  kernel.trace = [](Kernel& k, const Shape& s, Dtype dtype, const ParamValues& p) {
    const ExpShape shape{int_arg(s, "height"), int_arg(s, "width")};
    const ExpTiledParams params{int_param(p, "tile_size"), int_param(p, "pipeline_depth"), 1};
    dispatch_dtype(dtype, [&]<Dtype D>() { exp_tiled<D>(k, shape, params); });
  };
  kernel.reference = [](const Shape&, const HostTensors& in) {
    std::vector<double> out(in[0].size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = SCALE * std::exp(in[0][i]);
    return HostTensors{std::move(out)};
  };
  FamilySpec& own = kernel.own;
  own.shape_args = {"height", "width"};
  own.default_shape = {{"height", 128}, {"width", 1024}};
  own.dtypes = {Dtype::fp32, Dtype::bf16};
  auto dims = [](const Shape& s) { return std::pair{s.at("height"), s.at("width")}; };
  own.inputs = {{"x", dims, -2.0, 2.0}};
  own.outputs = {{"y", dims}};
  own.check_shape = [](const Shape& s) -> std::string {
    return s.at("width") % 128 == 0 ? "" : "width must be a multiple of 128";
  };
  own.flops = [](const Shape& s) { return double(s.at("height")) * double(s.at("width")); };
  own.hbm_bytes = [](const Shape& s, Dtype d) {
    return 2.0 * double(s.at("height")) * double(s.at("width")) * autotune::sim::dtype_bytes(d);
  };
  own.tolerance = {{Dtype::fp32, 1e-5}, {Dtype::bf16, 1e-2}};
}
'''

OWN_GOAL = """name: own
kernel: {shape: SHAPE, dtype: DTYPE}
kernel_source: KERNEL_SOURCE
goal: {improvement: 0.9}
max_iterations: 2
budget: {evaluations: 6, wall_time_s: 120}
search: {strategy: random, batch_size: 2, space: SPACE}
parallel: 2
timeout_s: 30
"""


def own_goal(tmp, name, shape="{height: 256, width: 1024}", dtype="fp32", source="own.cc",
             space="{tile_size: [128, 256, 512]}"):
    text = (OWN_GOAL.replace("SHAPE", shape).replace("DTYPE", dtype).replace("KERNEL_SOURCE", source)
            .replace("SPACE", space))
    (tmp / name).write_text(text)
    return name


def process_state(pid):
    """The state letter of /proc/PID/stat (R, S, Z, ...), None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def running(pid):
    return process_state(pid) not in (None, "Z", "X")


def cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def children_running(parent):
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def goal_error(tmp, env, goal, line, key, words):
    """A misuse of a goal: exit 2, one line naming file:line: key and what is wrong."""
    p = run(["run", goal, "--db", "errors.db"], env, tmp)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if p.returncode != 2 or len(lines) != 1:
        fail(f"{goal}: expected exit 2 and one line, got rc={p.returncode} stderr={p.stderr[-800:]}")
    if f"{goal}:{line}: {key}:" not in lines[0] or not all(w in lines[0] for w in words):
        fail(f"{goal}: expected '{goal}:{line}: {key}:' and {words} in: {lines[0]}")


def main():
    tmp = Path(tempfile.mkdtemp(prefix="autotune-ksrc-"))
    env = dict(os.environ, AUTOTUNE_CACHE_DIR=str(tmp / "cache"))
    env.pop("AUTOTUNE_DB", None)
    try:
# 1. A small goal, its best trial exported and compiled back.
        goal = (SOURCE / "configs/goals/quickstart.yaml").read_text()
        goal = goal.replace("evaluations: 24", "evaluations: 6").replace("max_iterations: 4", "max_iterations: 2")
        (tmp / "quick.yaml").write_text(goal)
        run(["run", "quick.yaml", "--db", "t.db"], env, tmp, check=0)
        run(["export", "1", "--db", "t.db", "-o", "best_kernel.cc"], env, tmp, check=0)
        text = (tmp / "best_kernel.cc").read_text()
        for needed in ("AUTOTUNE_USER_KERNEL", "run 1 (goal quickstart", "cycles", "M=256,N=512,K=512", "bf16"):
            if needed not in text:
                fail(f"exported source lacks {needed!r}")
        db = sqlite3.connect(tmp / "t.db")
        best_id = db.execute("select best_trial from runs where id = 1").fetchone()[0]
        metrics = json.loads(db.execute("select metrics from trials where id = ?", (best_id,)).fetchone()[0])
        db.close()
        p = run(["profile", "--kernel-source", "best_kernel.cc", "--shape", "M=256,N=512,K=512", "--dtype", "bf16",
                 "--json"], env, tmp, check=0)
        profile = json.loads(p.stdout)
        if profile["status"] != "ok" or not profile["verification"]["passed"]:
            fail(f"exported kernel not ok: {profile.get('status')} {profile.get('error')}")
        cycles = profile["summary"]["neuroncore_cycle_count"]
        if cycles != metrics["cycles"]:
            fail(f"exported kernel simulates {cycles} cycles, trial {best_id} recorded {metrics['cycles']}")
        if profile["compiled"] != "compiled":
            fail("first compile reported as cached")
        again = json.loads(run(["profile", "--kernel-source", "best_kernel.cc", "--shape", "M=256,N=512,K=512",
                                "--dtype", "bf16", "--json"], env, tmp, check=0).stdout)
        if again["compiled"] != "cached" or again["summary"]["neuroncore_cycle_count"] != cycles:
            fail("a second profile of the same source recompiled or differed")
        # A shape in part is misuse, as for a family: never completed from the kernel's default.
        p = run(["profile", "--kernel-source", "best_kernel.cc", "--shape", "M=256,N=512"], env, tmp)
        if p.returncode != 2 or p.stdout or "missing K; the shape arguments of" not in p.stderr \
                or "M, N, K" not in p.stderr or len(p.stderr.strip().splitlines()) != 1:
            fail(f"a partial --shape of a kernel source: rc={p.returncode} stderr={p.stderr[-800:]}")
        # So is a shape the kernel's family refuses: one line naming the reason, exit 2, nothing measured.
        p = run(["profile", "--kernel-source", "best_kernel.cc", "--shape", "M=0,N=512,K=512"], env, tmp)
        if p.returncode != 2 or p.stdout or len(p.stderr.strip().splitlines()) != 1 \
                or "shape M=0,N=512,K=512 of kernel" not in p.stderr or "M must be in [1, " not in p.stderr:
            fail(f"a --shape the family refuses: rc={p.returncode} stdout={p.stdout[-400:]} stderr={p.stderr[-800:]}")

# 2. A compile error : the compiler's message, exit non-zero.
        (tmp / "broken.cc").write_text('#include "kernels/external/user_kernel.hpp"\n'
                                        'AUTOTUNE_USER_KERNEL(broken) { kernel.family = "exp"; undeclared_name(); }\n')
        p = run(["profile", "--kernel-source", "broken.cc"], env, tmp)
        if p.returncode == 0 or "undeclared_name" not in p.stderr or "error" not in p.stderr:
            fail(f"compile error not reported: rc={p.returncode} stderr={p.stderr[-800:]}")

# 3. An unverifiable kernel is rejected with one line.
        (tmp / "unverifiable.cc").write_text('#include "kernels/external/user_kernel.hpp"\n'
                                              'AUTOTUNE_USER_KERNEL(nothing) { kernel.trace = [](auto&, auto&, auto, auto&) {}; }\n')
        p = run(["profile", "--kernel-source", "unverifiable.cc"], env, tmp)
        if p.returncode == 0 or "unverifiable" not in p.stderr:
            fail(f"unverifiable kernel not rejected: rc={p.returncode} stderr={p.stderr[-800:]}")

# 4. Crashing and hanging configurations fail with their reason; the run completes.
        (tmp / "faulty.cc").write_text(BAD_KERNEL)
        (tmp / "faulty.yaml").write_text(
            "name: faulty\n"
            "kernel: {family: exp, shape: {rows: 250, cols: 512}, dtype: fp32}\n"
            "kernel_source: faulty.cc\n"
            "goal: {improvement: 0.5}\n"
            "max_iterations: 3\n"
            "budget: {evaluations: 6, wall_time_s: 120}\n"
            "search: {strategy: grid, batch_size: 3, space: {mode: [0, 1, 2], tile_size: [256, 512]}}\n"
            "parallel: 3\n"
            "timeout_s: 3\n")
        p = run(["run", "faulty.yaml", "--db", "f.db", "--json"], env, tmp)
        if p.returncode not in (0, 1):
            fail(f"faulty goal run did not complete: rc={p.returncode} {p.stderr[-800:]}")
        db = sqlite3.connect(tmp / "f.db")
        rows = db.execute("select status, params, error from trials").fetchall()
        status = db.execute("select status from runs").fetchone()[0]
        db.close()
        if status != "completed":
            fail(f"faulty run status {status}")
        by_mode = {}
        for st, params, error in rows:
            by_mode.setdefault(json.loads(params)["mode"], []).append((st, error or ""))
        if not any(st == "ok" for st, _ in by_mode.get(0, [])):
            fail(f"no working configuration measured: {rows}")
        if not by_mode.get(1) or not all(st == "failed" and "SIGSEGV" in e for st, e in by_mode[1]):
            fail(f"segfaulting configurations not failed with SIGSEGV: {rows}")
        if not by_mode.get(2) or not all(st == "timeout" for st, _ in by_mode[2]):
            fail(f"looping configurations not timed out: {by_mode.get(2)}")
        # autotune killed (SIGKILL) while a kernel loops: its worker does not spin on for good.
        (tmp / "orphan.yaml").write_text("name: orphan\nkernel: {family: exp}\nkernel_source: faulty.cc\n"
                                         "start: {params: {mode: 2}}\ntimeout_s: 600\n")
        proc = subprocess.Popen([BIN, "run", "orphan.yaml", "--db", "orphan.db"], env=env, cwd=tmp,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        workers, deadline = [], time.monotonic() + 120
        while not workers and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = [pid for pid in children_running(proc.pid) if b"kernel-worker" in cmdline(pid)]
        proc.kill()
        proc.wait()
        if not workers:
            fail("no kernel worker started for the looping baseline")
        deadline = time.monotonic() + 10
        while any(running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [pid for pid in workers if running(pid)]
        for pid in left:
            os.kill(pid, 9)
        if left:
            fail(f"kernel workers {left} still ran 10 s after autotune was killed")

# 5. A kernel with its own reference, tuned by a goal without kernel.family : its shape
#arguments, dtypes and parameters come from its declaration; each candidate is verified
#against its own reference.
        (tmp / "own.cc").write_text(OWN_KERNEL.replace("SCALE", "1.0"))
        goal = own_goal(tmp, "own.yaml")
        p = run(["run", goal, "--db", "own.db", "--json"], env, tmp, check=0)
        summary = json.loads(p.stdout)
        if summary["status"] != "completed" or summary["best"]["variant"] != "own_exp":
            fail(f"own-reference goal: {summary['status']} best {summary['best']}")
        if summary["kernel"] != {"name": "own_exp", "shape": {"height": 256, "width": 1024},
                                 "shape_source": "goal", "dtype": "fp32"}:
            fail(f"own-reference goal's resolved kernel: {summary['kernel']}")
        db = sqlite3.connect(tmp / "own.db")
        run_row = db.execute("select kernel, goal_yaml from runs").fetchone()
        rows = db.execute("select variant, params, status, verification from trials").fetchall()
        skills = {
  s for (s, ) in db.execute("select distinct skill from decisions")}
        db.close()
        if run_row[0] != "own_exp" or "height: 256" not in run_row[1] or "family" in run_row[1]:
            fail(f"own-reference run record: {run_row}")
        if len(rows) < 3 or {r[0] for r in rows} != {"own_exp"}:
            fail(f"own-reference trials: {rows}")
        for _, params, st, verification in rows:
            params = json.loads(params)
            if set(params) != {"tile_size", "pipeline_depth"} or params["tile_size"] not in (128, 256, 512):
                fail(f"own-reference trial outside the declared, narrowed space: {params}")
            v = json.loads(verification or "{}")
            if st != "ok" or not v.get("passed") or v.get("cosine") is None:
                fail(f"own-reference trial not verified ok: {st} {v}")
        if len({r[1] for r in rows}) != len(rows) or not {"param_explorer", "benchmark_runner"} <= skills:
            fail(f"own-reference run did not search: {rows} {skills}")
#Checked against its own reference : a reference the kernel does not compute fails the baseline.
        (tmp / "own_wrong.cc").write_text(OWN_KERNEL.replace("SCALE", "2.0"))
        p = run(["run", own_goal(tmp, "own_wrong.yaml", source="own_wrong.cc"), "--db", "own.db", "--json"], env, tmp)
        wrong = json.loads(p.stdout)
        if p.returncode != 1 or wrong["status"] != "failed" or "verification" not in wrong["stop_reason"]:
            fail(f"a kernel that misses its own reference was not failed: rc={p.returncode} {wrong}")
#The goal is still read strictly, against the declaration : file : line : key.
        goal_error(tmp, env, own_goal(tmp, "e1.yaml", shape="{height: 256, rows: 3}"), 2, "kernel.shape.rows",
                   ["rows", "height, width"])
        goal_error(tmp, env, own_goal(tmp, "e2.yaml", dtype="fp16"), 2, "kernel.dtype",
                   ["own_exp", "fp16", "fp32, bf16"])
        goal_error(tmp, env, own_goal(tmp, "e3.yaml", shape="[256, 1000]"), 2, "kernel.shape",
                   ["width must be a multiple of 128"])
        goal_error(tmp, env, own_goal(tmp, "e4.yaml", shape="[256]"), 2, "kernel.shape",
                   ["expected 2 values [height, width]"])
        goal_error(tmp, env, own_goal(tmp, "e9.yaml", shape="{width: 1024}"), 2, "kernel.shape",
                   ["missing height; the shape arguments of own_exp are height, width"])
        goal_error(tmp, env, own_goal(tmp, "e5.yaml", space="{tile: [128]}"), 7, "search.space.tile",
                   ["unknown parameter 'tile'", "tile_size, pipeline_depth"])
        goal_error(tmp, env, own_goal(tmp, "e6.yaml", space="{tile_size: [100]}"), 7, "search.space.tile_size",
                   ["100", "[128, 256, 512]"])
        (tmp / "e7.yaml").write_text(OWN_GOAL.replace("kernel: {shape: SHAPE, dtype: DTYPE}", "kernel: {family: exp}")
                                     .replace("KERNEL_SOURCE", "own.cc").replace("SPACE", "{}"))
        goal_error(tmp, env, "e7.yaml", 3, "kernel_source", ["own_exp", "no family", "'exp'"])
#A source naming a family, in a goal without one : the goal takes the family's shape arguments.
        (tmp / "e8.yaml").write_text("kernel: {shape: {M: 4}}\nkernel_source: faulty.cc\n")
        goal_error(tmp, env, "e8.yaml", 1, "kernel.shape.M", ["unknown key", "rows, cols"])

# 6. A goal's kernel source that does not compile: a run with one failed trial holding the
#compiler's message, a clear stop reason, the message printed, exit 1.
        for name, kernel_line in (("broken_family", "kernel: {family: exp}\n"), ("broken_own", "")):
            (tmp / f"{name}.yaml").write_text(f"name: {name}\n{kernel_line}kernel_source: broken.cc\n")
            p = run(["run", f"{name}.yaml", "--db", "broken.db", "--json"], env, tmp)
            if p.returncode != 1 or "undeclared_name" not in p.stderr:
                fail(f"{name}: rc={p.returncode} (want 1), compiler message not printed: {p.stderr[-800:]}")
            summary = json.loads(p.stdout)
            reason = summary["stop_reason"]
            if summary["status"] != "failed" or not reason.startswith("nothing to tune: kernel source broken.cc: "
                                                                      "compilation failed") \
                    or "undeclared_name" not in reason or "\n" in reason:
                fail(f"{name}: status {summary['status']}, stop reason {reason!r}")
            db = sqlite3.connect(tmp / "broken.db")
            trials = db.execute("select variant, status, error from trials where run = ?",
                                (summary["run_id"],)).fetchall()
            decisions = db.execute("select skill, action, outcome, rationale from decisions where run = ? order by seq",
                                   (summary["run_id"],)).fetchall()
            db.close()
            if len(trials) != 1 or trials[0][:2] != ("broken", "failed") or "undeclared_name" not in trials[0][2] \
                    or "error:" not in trials[0][2] or len(trials[0][2]) > 4500:
                fail(f"{name}: trials {trials}")
            if decisions[0][1] != "baseline" or not decisions[0][2].startswith("failed: compilation failed") \
                    or "cannot measure anything" not in decisions[0][3] \
                    or decisions[-1][1:3] != ("fail", "goal not met") or decisions[-1][3] != reason:
                fail(f"{name}: decision log {decisions}")

# 7. A kernel whose declaration never returns : describe honours the timeout.
        (tmp / "spins.cc").write_text('#include "kernels/external/user_kernel.hpp"\n'
                                       'AUTOTUNE_USER_KERNEL(spins) {\n'
                                       '  kernel.family = "exp";\n'
                                       '  for (volatile unsigned spin = 0;; spin = spin + 1u) {}\n'
                                       '}\n')
        for attempt in ("compiled", "cached"):  # the second run is timed without the compiler
            started = time.monotonic()
            p = run(["profile", "--kernel-source", "spins.cc", "--timeout", "3"], env, tmp)
            took = time.monotonic() - started
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            if p.returncode == 0 or (attempt == "cached" and took > 15) or len(lines) != 1 \
                    or "did not finish within 3 s" not in lines[0]:
                fail(f"a kernel hanging in its declaration ({attempt}): rc={p.returncode} after {took:.1f} s: "
                     f"{p.stderr[-800:]}")
        (tmp / "spins.yaml").write_text("name: spins\nkernel_source: spins.cc\ntimeout_s: 3\n")
        started = time.monotonic()
        p = run(["run", "spins.yaml", "--db", "spins.db", "--json"], env, tmp)
        took = time.monotonic() - started
        summary = json.loads(p.stdout) if p.stdout.strip() else {}
        db = sqlite3.connect(tmp / "spins.db")
        trials = db.execute("select status, error from trials").fetchall()
        db.close()
        if p.returncode != 1 or took > 20 or "did not finish within 3 s" not in summary.get("stop_reason", "") \
                or [t[0] for t in trials] != ["timeout"]:
            fail(f"a goal whose kernel hangs while loading: rc={p.returncode} after {took:.1f} s: "
                 f"{summary.get('stop_reason')} {trials} {p.stderr[-800:]}")

# 8. Installed API : install into a prefix and compile the export against it.
        build_dir = Path(BIN).parent
        prefix = tmp / "prefix"
        inst = subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)], capture_output=True,
                              text=True, timeout=300)
        if inst.returncode != 0:
            fail(f"cmake --install failed: {inst.stderr[-800:]}")
        for needed in ("bin/autotune", "include/autotune/kernels/external/user_kernel.hpp",
                       "include/autotune/kernels/families/gemm.hpp", "lib/libautotune_kernels.a",
                       "share/autotune/configs/targets/trn1.yaml"):
            if not (prefix / needed).exists():
                fail(f"install lacks {needed}")
        installed_env = dict(env, AUTOTUNE_CACHE_DIR=str(tmp / "cache-installed"))
        p = subprocess.run([str(prefix / "bin/autotune"), "profile", "--kernel-source", "best_kernel.cc", "--shape",
                            "M=256,N=512,K=512", "--dtype", "bf16", "--json"], capture_output=True, text=True,
                           env=installed_env, cwd=tmp, timeout=600)
        if p.returncode != 0:
            fail(f"installed profile failed: {p.stderr[-800:]}")
        installed = json.loads(p.stdout)
        if installed["summary"]["neuroncore_cycle_count"] != cycles:
            fail("the kernel compiled against the installed API simulates other cycles")
        if str(tmp / "cache-installed") not in installed["shared_object"]:
            fail("the installed binary did not compile its own shared object")
        print("ok: export round trip, compile errors (profile, goal), unverifiable, crash/hang isolation, own-reference "
              "goal, hang while loading, installed API")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
