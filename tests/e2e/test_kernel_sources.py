"""Kernel sources in and out: export a tuned trial, compile it back with
`profile --kernel-source` (same cycles as recorded), compile errors, crashing
and hanging kernels in a goal run, and compiling against an installed API."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
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
#include "kernels/families/family_support.hpp"
#include "kernels/families/exp.hpp"

using namespace autotune::kernels;

// exp in column tiles; `mode` 1 crashes (SIGSEGV), 2 never returns.
AUTOTUNE_USER_KERNEL(exp_faulty) {
  kernel.family = "exp";
  kernel.params = {{"tile_size", "columns per tile", {128, 256, 512}, 512},
                   {"mode", "0 works, 1 segfaults, 2 loops forever", {0, 1, 2}, 0}};
  kernel.trace = [](Kernel& k, const Shape& s, Dtype dtype, const ParamValues& p) {
    if (p.at("mode") == 1) std::raise(SIGSEGV);
    if (p.at("mode") == 2) for (volatile int spin = 0;; spin = spin + 1) {}
    const ExpShape shape{int_arg(s, "rows"), int_arg(s, "cols")};
    const ExpTiledParams params{int_param(p, "tile_size"), 2, 1};
    dispatch_dtype(dtype, [&]<Dtype D>() { exp_tiled<D>(k, shape, params); });
  };
}
'''


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

        # 2. A compile error: the compiler's message, exit non-zero.
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

        # 5. Installed API: install into a prefix and compile the export against it.
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
        print("ok: export round trip, compile error, unverifiable, crash/hang isolation, installed API")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
