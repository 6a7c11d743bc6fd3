"""A skinny GEMM (trn2, fp16, M=128 N=4096 K=2048, MFU objective): the loop once spent its whole budget on
`tiled` although `hoisted` with the same parameters is faster. It must leave the start variant and end no
slower than every `tiled` candidate it measured, within its budget."""
import os

from loop_support import check, query, run_json, tempdir, write_goal

GOAL = """
name: skinny-gemm
kernel: {family: gemm, shape: {M: 128, N: 4096, K: 2048}, dtype: fp16}
target: trn2
objective: mfu
goal: {improvement: 5.0}
max_iterations: 6
budget: {evaluations: 30}
start: {variant: tiled}
parallel: 2
seed: 1
"""


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "skinny.db")
        summary = run_json(["run", write_goal(tmp, "skinny.yaml", GOAL)], db)
        check(summary["status"] == "completed" and summary["evaluations"] <= 30, f"summary: {summary}")
        rows = query(db, "SELECT variant, json_extract(metrics, '$.latency_s') FROM trials WHERE run = ? AND "
                         "status IN ('ok', 'cached')", (summary["run_id"],))
        variants = {r[0] for r in rows}
        check(len(variants) > 1, f"the loop never left tiled: {variants}")
        tiled = [r[1] for r in rows if r[0] == "tiled"]
        best = summary["best"]["metrics"]["latency_s"]
        check(best <= min(tiled), f"best {best} is slower than a tiled candidate {min(tiled)}")
        print(f"skinny gemm: {sorted(variants)}, best {summary['best']['variant']} {best * 1e6:.2f} us "
              f"in {summary['evaluations']} evaluations")
    print("ok")


if __name__ == "__main__":
    main()
