"""autotune sweep: every configuration, stored, the top configurations printed; the loop's best is never
better than the sweep's optimum."""
import os
import re
import signal
import subprocess
import time

from loop_support import BIN, check, goal_path, query, run, run_json, tempdir, write_goal


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "sweep.db")
        goal = write_goal(tmp, "exp.yaml", """
name: sweep-test
kernel: {family: exp, shape: [250, 512], dtype: fp32}
search:
  space: {tile_size: [64, 128, 256, 512], pipeline_depth: [1, 2, 3], unroll_factor: [1, 2]}
start: {variant: naive}
""")
        result = run_json(["sweep", goal, "--jobs", "2"], db)
        check(result["configurations"] == 1 + 4 * 3 * 2, f"configurations: {result['configurations']}")
        stored = query(db, "SELECT COUNT(*) FROM trials WHERE run = ?", (result["run_id"],))[0][0]
        check(stored == result["configurations"], f"{stored} trials stored")
        check(result["top"], "no top configurations")
        lat = [t["metrics"]["latency_s"] for t in result["top"]]
        check(lat == sorted(lat), "top configurations are not sorted")

        proc = run(["sweep", goal, "--jobs", "2", "--top", "3"], db)
        check(proc.returncode == 0 and "top 3" in proc.stdout, proc.stdout + proc.stderr)
        check("ETA" in proc.stderr, "no progress with an ETA")
        check("from the cache" in proc.stdout, "the second sweep should say how many it re-used")

        # The goal's start point is the baseline, measured first, whatever the job count.
        for jobs in ("1", "2"):
            fresh = os.path.join(tmp, f"baseline-{jobs}.db")
            sweep = run_json(["sweep", goal, "--jobs", jobs], fresh)
            first = query(fresh, "SELECT id, variant FROM trials WHERE run = ? ORDER BY id LIMIT 1", (sweep["run_id"],))[0]
            baseline = query(fresh, "SELECT baseline_trial FROM runs WHERE id = ?", (sweep["run_id"],))[0][0]
            check(first[1] == "naive" and baseline == first[0], f"--jobs {jobs}: baseline {baseline}, first {first}")

        # --limit samples the whole space (seeded), not its first configurations in index order.
        limited = os.path.join(tmp, "limited.db")
        sample = run_json(["sweep", goal, "--jobs", "2", "--limit", "9"], limited)
        check(sample["configurations"] == 9, f"--limit 9: {sample['configurations']}")
        rows = query(limited, "SELECT params FROM trials WHERE run = ?", (sample["run_id"],))
        depths = {r[0] for r in rows if r[0] and '"pipeline_depth":3' in r[0].replace(" ", "")}
        tiles = {r[0] for r in rows if r[0] and '"tile_size":512' in r[0].replace(" ", "")}
        check(depths and tiles, f"a sample of 9 should reach past the first index values: {rows}")
        again = run_json(["sweep", goal, "--jobs", "2", "--limit", "9"], os.path.join(tmp, "limited2.db"))
        check(sorted(str(t["params"]) for t in again["top"]) == sorted(str(t["params"]) for t in sample["top"]),
              "the same seed must sample the same configurations")

        # With an MFU objective the top list shows MFU, ranked by it, beside the latency.
        mfu_goal = write_goal(tmp, "mfu.yaml", """
name: mfu-sweep
kernel: {family: gemm, shape: {M: 512, N: 1024, K: 512}, dtype: bf16}
objective: mfu
variants: [tiled]
""")
        proc = run(["sweep", mfu_goal, "--jobs", "2", "--limit", "8", "--top", "3"], os.path.join(tmp, "mfu.db"))
        lines = [l for l in proc.stdout.splitlines() if l.strip()[:3] in ("1. ", "2. ", "3. ")]
        check(proc.returncode == 0 and "top 3 by mfu" in proc.stdout and len(lines) == 3, proc.stdout + proc.stderr)
        mfus = [float(l.split("MFU ")[1].split("%")[0]) for l in lines]
        check(mfus == sorted(mfus, reverse=True) and all(" us" in l or " ms" in l for l in lines),
              f"MFU ranking and latencies expected: {lines}")

        # A sweep interrupted by Ctrl-C says how to resume it; --resume measures only what is missing.
        resumable = os.path.join(tmp, "resumable.db")
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        proc = subprocess.Popen([BIN, "sweep", goal_path("gemm-article.yaml"), "--limit", "40", "--jobs", "1",
                                 "--db", resumable], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=env)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
            try:
                if query(resumable, "SELECT COUNT(*) FROM trials")[0][0] >= 5:
                    break
            except Exception:
                continue
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        sweep_id = query(resumable, "SELECT id FROM runs")[0][0]
        before = query(resumable, "SELECT COUNT(*) FROM trials WHERE run = ?", (sweep_id,))[0][0]
        if proc.returncode == 130:
            check(f"--resume {sweep_id} --db {resumable} --limit 40" in stderr, f"no resume hint: {stderr[-500:]}")
        resumed = run_json(["sweep", goal_path("gemm-article.yaml"), "--limit", "40", "--jobs", "2",
                            "--resume", str(sweep_id)], resumable)
        check(resumed["run_id"] == sweep_id and resumed["configurations"] == 40, f"resumed sweep: {resumed}")
        check(resumed["resumed"] == before and resumed["measured"] + resumed["cache_hits"] == 40 - before,
              f"{before} committed before; resumed {resumed['resumed']}, measured {resumed['measured']}")
        rows = query(resumable, "SELECT COUNT(*), COUNT(DISTINCT config_hash) FROM trials WHERE run = ?", (sweep_id,))
        check(rows[0] == (40, 40), f"every configuration once: {rows}")
        proc = run(["sweep", goal, "--resume", str(sweep_id)], resumable)
        check(proc.returncode == 2 and "not a sweep of" in proc.stderr, f"resume with another goal: {proc.stderr}")
        # Another --limit (or none) draws another sample: refused before anything is written, not mixed in.
        for limit in (["--limit", "100"], []):
            proc = run(["sweep", goal_path("gemm-article.yaml"), *limit, "--resume", str(sweep_id)], resumable)
            check(proc.returncode == 2 and "the sweep set out to measure 40 configurations" in proc.stderr
                  and "(--limit 40)" in proc.stderr, f"resume with {limit}: {proc.stderr}")
        rows = query(resumable, "SELECT COUNT(*), (SELECT status FROM runs WHERE id = ?) FROM trials WHERE run = ?",
                     (sweep_id, sweep_id))
        check(rows[0] == (40, "completed"), f"a refused resume changed the sweep: {rows}")
        # The same name with another seed draws another sample: refused, not mixed into the run.
        reseeded = os.path.join(os.path.dirname(resumable), "reseeded.yaml")
        with open(goal_path("gemm-article.yaml")) as original, open(reseeded, "w") as out:
            text = original.read()
            check(re.search(r"^seed: \d+$", text, re.M) is not None, "gemm-article.yaml names no seed")
            out.write(re.sub(r"^seed: \d+$", "seed: 12345", text, flags=re.M))
        proc = run(["sweep", reseeded, "--limit", "40", "--resume", str(sweep_id)], resumable)
        check(proc.returncode == 2 and "the sweep was started from a different goal" in proc.stderr,
              f"resume with another seed: {proc.stderr}")
        # A sweep is resumed by `sweep`; `run` says so before anything is replayed.
        proc = run(["run", goal_path("gemm-article.yaml"), "--resume", str(sweep_id)], resumable)
        lines = proc.stderr.strip().splitlines()
        check(proc.returncode == 2 and len(lines) == 1 and "is a sweep" in lines[0]
              and f"autotune sweep GOAL --resume {sweep_id}" in lines[0], f"run --resume of a sweep: {proc.stderr}")

        # A sweep where nothing passes says so, and counts its failures, rather than printing an empty top.
        write_goal(tmp, "refuse.py", 'print(\'{"latency_s": 0.001, "valid": false}\')\n')
        refused = write_goal(tmp, "refused.yaml", "name: refused\ntarget: {kind: command, argv: [python3, refuse.py, "
                                                  "'{x}']}\nsearch:\n  space: {x: [1, 2, 3]}\n")
        proc = run(["sweep", refused], db)
        check(proc.returncode == 0 and "3 failed)" in proc.stdout and "no configuration passed: every one failed "
              "(autotune trials" in proc.stdout and "top 0" not in proc.stdout, f"nothing passed: {proc.stdout}")
        nothing = run_json(["sweep", refused], os.path.join(tmp, "refused.db"))
        check(nothing["failed"] == nothing["configurations"] == 3 and nothing["top"] == [], f"--json: {nothing}")
        check(result["failed"] == 0, f"a sweep where every configuration passed: {result}")

        loop = run_json(["run", goal], db)
        check(loop["best"]["metrics"]["latency_s"] >= lat[0] * (1 - 1e-9), "the loop beat the exhaustive sweep")
        proc = run(["sweep", goal, "--jobs", "0"], db)
        check(proc.returncode == 2 and "--jobs" in proc.stderr, f"--jobs 0: {proc.stderr}")
    print("ok")


if __name__ == "__main__":
    main()
