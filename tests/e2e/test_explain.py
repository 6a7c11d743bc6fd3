"""`autotune explain` tells what the loop made of each trial, as its decision log records it.

A noisy command target (the program and goal of test_noisy_command_target.py): x=1 has a lower median than
the start but within its noise; x=2's first measurement is a transient, measured again and not confirmed;
x=3 is measured again and confirmed. explain must not call a trial the loop did not count "the best so far",
nor compare a measurement again with its own first measurement.

Plugins (docs/plugins.md): a generator plugin after the built-in puts its own idea first, answering a
finding of the built-in analyzer, and an analyzer plugin follows the built-in. explain must name the
plugin's idea with its finding, the finding's evidence and the plugin's rationale, and the candidate
analysed."""
import json
import os

from loop_support import check, goal_path, one_error_line, query, run, run_json, tempdir, write_goal
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


GENERATOR_PLUGIN = r"""
import json, sys
for line in sys.stdin:
    request = json.loads(line)["request"]
    ideas = list(request["builtin"]["ideas"])
    mine = {"id": "plugin:blocked_mnk", "kind": "structural", "variant": "blocked_mnk",
            "probes": [{"variant": "blocked_mnk", "params": {}}], "finding": "repeated_loads",
            "rationale": "the plugin's own reason: blocked_mnk loads each tile once", "expected_gain": 1.0}
    if mine["id"] not in request["tried_ideas"]:
        ideas.insert(0, mine)
    print(json.dumps({"result": {"ideas": ideas},
                      "decision": {"action": "put_mine_first", "rationale": "mine first"}}), flush=True)
"""

ANALYZER_PLUGIN = r"""
import json, sys
for line in sys.stdin:
    request = json.loads(line)["request"]
    print(json.dumps({"result": request["builtin"],
                      "decision": {"action": "agree", "rationale": "nothing to add"}}), flush=True)
"""


def check_plugin_idea(tmp):
    for name, text in (("generator.py", GENERATOR_PLUGIN), ("analyzer.py", ANALYZER_PLUGIN)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    with open(goal_path("quickstart.yaml")) as f:
        goal = f.read() + """
skills:
  - {name: agree, command: [python3, analyzer.py], role: profile_analyzer, after: profile_analyzer}
  - {name: mine-first, command: [python3, generator.py], role: kernel_generator, after: kernel_generator}
"""
    db = os.path.join(tmp, "plugins.db")
    run_id = run_json(["run", write_goal(tmp, "plugins.yaml", goal)], db)["run_id"]
    rows = query(db, "SELECT id FROM trials WHERE run = ? AND variant = 'blocked_mnk' ORDER BY id", (run_id,))
    check(rows, "the plugin's idea was not measured")
    text, data = explain(db, run_id, rows[0][0])
    check(data["idea"].get("id") == "plugin:blocked_mnk" and data["generation"]["proposer"] == "plugin:mine-first",
          f"the idea: {data['idea']}, from {data['generation'] and data['generation']['proposer']}")
    check("the plugin's own reason" in text and "idea's why" in text, text)
    check([f["kind"] for f in data["findings"]] == ["repeated_loads"] and "traffic_ratio" in text,
          f"the finding it answers: {data['findings']}\n{text}")
    check("none acted on" not in text, text)
    (best_before_analysis,) = query(db, "SELECT json_extract(inputs, '$.candidate') FROM decisions WHERE run = ? "
                                    "AND seq < ? AND proposer = 'rules' AND skill = 'profile_analyzer' "
                                    "ORDER BY seq DESC LIMIT 1", (run_id, data["analysis"]["seq"]))[0]
    check(data["analysed"] == best_before_analysis and f"analysed      {best_before_analysis}" in text,
          f"analysed: {data['analysed']!r}, the built-in analysed {best_before_analysis!r}\n{text}")


def check_trial_of_another_run(tmp):
    db = os.path.join(tmp, "two.db")
    first = run_json(["run", goal_path("quickstart.yaml")], db)["run_id"]
    second = run_json(["run", goal_path("quickstart.yaml")], db)["run_id"]
    (trial,) = query(db, "SELECT MIN(id) FROM trials WHERE run = ?", (second,))[0]
    proc = run(["explain", str(first), str(trial)], db)
    one_error_line(proc, f"trial {trial} is a trial of run {second}, not of run {first}")


def check_reused_measurement(tmp):
    """A simulated candidate whose program (or schedule) is the same as one measured before is not simulated
    again (verification.same_program_as, same_schedule_as); explain says so and names the candidate, and the
    trial that measured it."""
    db = os.path.join(tmp, "reused.db")
    run_id = run_json(["run", goal_path("quickstart.yaml")], db)["run_id"]
    rows = query(db, "SELECT id, variant, params, verification FROM trials WHERE run = ? ORDER BY id", (run_id,))
    keys = {"same_program_as": "program", "same_schedule_as": "schedule"}
    reused = [(i, json.loads(v)[key], same) for i, _, _, v in rows for key, same in keys.items() if key in json.loads(v)]
    check(reused and len(reused) < len(rows), f"the quickstart scenario changed: {len(reused)} of {len(rows)} reused")
    for trial_id, candidate, same in reused:
        text, data = explain(db, run_id, trial_id)
        check(data["reused_from"]["candidate"] == candidate and data["reused_from"]["same"] == same and
              f"not simulated again: the same {same}" in text, f"trial {trial_id}, reused from {candidate}:\n{text}")
        earlier = data["reused_from"]["trial"]
        if earlier is not None:
            (variant, params), = [(v, json.loads(p)) for i, v, p, _ in rows if i == earlier]
            written = ",".join(f"{k}={json.dumps(params[k])}" for k in sorted(params))
            check(earlier < trial_id and candidate == f"{variant}{{{written}}}" and f"trial {earlier}" in text,
                  f"trial {trial_id}: reused from trial {earlier} ({variant} {params}), not {candidate}:\n{text}")
    measured = next(i for i, _, _, v in rows if not keys.keys() & json.loads(v).keys())
    text, data = explain(db, run_id, measured)
    check(data["reused_from"] is None and "not simulated again" not in text, f"trial {measured} was measured:\n{text}")


def main():
    with tempdir() as tmp:
        check_noise_rule(tmp)
    with tempdir() as tmp:
        check_plugin_idea(tmp)
    with tempdir() as tmp:
        check_trial_of_another_run(tmp)
    with tempdir() as tmp:
        check_reused_measurement(tmp)
    print("ok")


if __name__ == "__main__":
    main()
