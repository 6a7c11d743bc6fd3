"""`autotune explain` tells what the loop made of each trial, as its decision log records it.

A noisy command target (the program and goal of test_noisy_command_target.py): x=1 has a lower median than
the start but within its noise; x=2's first measurement is a transient, measured again and not confirmed;
x=3 is measured again and confirmed. explain must not call a trial the loop did not count "the best so far",
nor compare a measurement again with its own first measurement."""
import json
import os

from loop_support import check, query, run, run_json, tempdir, write_goal
from test_noisy_command_target import GOAL as NOISY_GOAL, PROGRAM as NOISY_PROGRAM


def explain(db, run_id, trial_id):
    text = run(["explain", str(run_id), str(trial_id)], db)
    check(text.returncode == 0, f"explain {run_id} {trial_id}: {text.stderr}")
    return text.stdout, run_json(["explain", str(run_id), str(trial_id)], db)


def result_line(text):
    return next(line for line in text.splitlines() if line.strip().startswith("result"))


def noisy_run(tmp):
    program = os.path.join(tmp, "noisy.py")
    with open(program, "w") as f:
        f.write(NOISY_PROGRAM)
    os.chmod(program, 0o755)
    db = os.path.join(tmp, "noisy.db")
    run_id = run_json(["run", write_goal(tmp, "noisy.yaml", NOISY_GOAL)], db)["run_id"]
    (best,) = query(db, "SELECT best_trial FROM runs WHERE id = ?", (run_id,))[0]
    trials = {}
    for trial_id, params, metrics in query(db, "SELECT id, params, metrics FROM trials WHERE run = ? ORDER BY id",
                                           (run_id,)):
        trials.setdefault(json.loads(params)["x"], []).append((trial_id, json.loads(metrics)))
    check([len(trials[x]) for x in range(4)] == [1, 1, 2, 2], f"the noisy scenario changed: {trials}")
    return db, run_id, best, trials


def check_noise_rule(tmp):
    db, run_id, best, trials = noisy_run(tmp)
    start = trials[0][0][0]
    (near, _), = trials[1]
    (transient, _), (transient_again, _) = trials[2]
    (win, _), (win_again, win_again_metrics) = trials[3]
    check(best == win_again and win_again_metrics["remeasured"]["of_trial"] == win,
          f"the run's best is {best}, expected the confirmed measurement again {win_again}")

    for trial in (near, transient, transient_again, win):
        text, data = explain(db, run_id, trial)
        check(not data["became_best"] and "became the best" not in text,
              f"trial {trial} was not counted by the loop, yet explain says it became the best:\n{text}")
        check(data["noise_rule"] and not data["noise_rule"]["counts"], f"trial {trial}: {data['noise_rule']}")
        check("not counted as better (the noise rule)" in result_line(text), text)
        check(data["best_before"]["id"] == start,
              f"trial {trial}: the best before is {data['best_before']['id']}, the loop's was trial {start}")
    text, _ = explain(db, run_id, near)
    check("within its noise" in text, text)
    text, _ = explain(db, run_id, transient)
    check(f"measured again as trial {transient_again}: not confirmed" in text, text)
    text, _ = explain(db, run_id, win)
    check(f"measured again as trial {win_again}: confirmed" in text, text)

    text, data = explain(db, run_id, win_again)
    check(data["became_best"] and data["is_run_best"], f"the confirmed best: {data['became_best']}")
    check(data["best_before"]["id"] == start,
          f"the measurement again is compared with trial {data['best_before']['id']}, not the loop's best before")
    check(data["noise_rule"]["counts"] and f"the candidate of trial {win} measured again" in text, text)
    check("became the best so far; it is the run's best trial" in result_line(text), text)


def main():
    with tempdir() as tmp:
        check_noise_rule(tmp)
    print("ok")


if __name__ == "__main__":
    main()
