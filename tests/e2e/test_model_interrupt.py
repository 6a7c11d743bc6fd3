"""SIGINT while a model goal's kernel loop runs: the model run and the kernel run in progress are both
recorded as interrupted (a kernel run left `running` would look alive forever), exit status 130, and the
message names both runs."""
import os

from loop_support import SOURCE, check, interrupt_when, query, tempdir, write_goal

MODEL = os.path.join(SOURCE, "configs", "models", "qwen3-0.6b.yaml")


def main():
    with tempdir() as tmp:
        # A loop long enough to be interrupted in: attention at a 2K prompt, a dozen evaluations, one worker.
        goal = write_goal(tmp, "model-goal.yaml", f"""
name: interrupted-model
model: {{file: {MODEL}, layers: 1, seq: 2048}}
target: trn2
max_iterations: 3
per_kernel: {{iterations: 3, evaluations: 12}}
budget: {{evaluations: 30}}
parallel: 1
seed: 1
""")
        db = os.path.join(tmp, "model.db")
        # "[tune attention: analyse]": the kernel run exists and its loop is going.
        status, stderr = interrupt_when(["run", goal], db,
                                        lambda line: "[tune " in line and ": " in line.split("[tune ", 1)[1])
        check(status == 130, f"exit {status} (130 expected): {stderr[-2000:]}")
        runs = query(db, "SELECT id, kernel, status, stop_reason FROM runs ORDER BY id")
        check(len(runs) >= 2 and runs[0][1].startswith("model:"), f"a model run and a kernel run: {runs}")
        # Kernel loops that ended before the signal are completed; the model run and the loop in progress not.
        for run_id, kernel, status, _ in runs[1:-1]:
            check(status == "completed", f"run {run_id} ({kernel}) is {status}: {runs}")
        for run_id, _, status, reason in (runs[0], runs[-1]):
            check(status == "interrupted" and reason == "interrupted by SIGINT", f"run {run_id}: {runs}")
        check(f"runs {runs[-1][0]}, {runs[0][0]} keep every committed trial" in stderr, stderr[-2000:])
    print("ok")


if __name__ == "__main__":
    main()
