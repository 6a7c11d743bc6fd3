"""autotune sweep: every configuration, stored, the top configurations printed; the loop's best is never
better than the sweep's optimum."""
import os

from loop_support import check, goal_path, query, run, run_json, tempdir, write_goal


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

        loop = run_json(["run", goal], db)
        check(loop["best"]["metrics"]["latency_s"] >= lat[0] * (1 - 1e-9), "the loop beat the exhaustive sweep")
        proc = run(["sweep", goal, "--jobs", "0"], db)
        check(proc.returncode == 2 and "--jobs" in proc.stderr, f"--jobs 0: {proc.stderr}")
    print("ok")


if __name__ == "__main__":
    main()
