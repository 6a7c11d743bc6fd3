"""A goal with `search: {transfer: true}` learns from earlier runs of the same kernel in its database: the
Param Explorer's decision names the runs it learnt from, and bayes measures the earlier run's best
configuration among its first proposals. Without the key, or with no earlier run, nothing is learnt."""
import json
import os

from loop_support import SOURCE, check, query, run_json, tempdir, write_goal

TUNING = os.path.join(SOURCE, "..", "shared", "data", "tuning", "convolution")


def replay_goal(tmp, device, transfer):
    text = f"""name: transfer-{device}
target: {{kind: replay, cachefile: {os.path.abspath(os.path.join(TUNING, device + '.json'))}}}
objective: latency
goal: {{latency_s: 0.0001}}   # below the recorded optimum: every iteration runs
max_iterations: 2
budget: {{evaluations: 30, wall_time_s: 120}}
search: {{strategy: bayes, batch_size: 4, transfer: {'true' if transfer else 'false'}}}
parallel: 2
seed: 3
"""
    return write_goal(tmp, f"{device}-{transfer}.yaml", text)


def explorer_decisions(db, run):
    rows = query(db, "SELECT inputs, rationale FROM decisions WHERE run = ? AND skill = 'param_explorer' "
                     "AND action = 'search:bayes' ORDER BY seq", (run,))
    return [(json.loads(inputs or "{}"), rationale) for inputs, rationale in rows]


def params_of(db, run):
    return [json.loads(p) for (p,) in query(db, "SELECT params FROM trials WHERE run = ? ORDER BY id", (run,))]


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        # Nothing earlier to learn from: the key is accepted and changes nothing.
        first = run_json(["run", replay_goal(tmp, "RTX_Titan", True)], db)
        check(all("related_runs" not in inputs for inputs, _ in explorer_decisions(db, first["run_id"])),
              "the first run of the kernel has no related run")

        second = run_json(["run", replay_goal(tmp, "RTX_3090", True)], db)
        decisions = explorer_decisions(db, second["run_id"])
        check(decisions, "the second run searched with bayes")
        inputs, rationale = decisions[0]
        check(inputs.get("related_runs") == [first["run_id"]], f"the decision names the earlier run: {inputs}")
        check(f"earlier run(s) [{first['run_id']}]" in rationale, f"the rationale says so: {rationale!r}")
        # The earlier run's best configuration lies in this space too (same kernel and parameters): bayes
        # starts its design with it. Among 6768 configurations, a design that ignored the earlier run would
        # pick it by chance about once in a thousand runs.
        best = first["best"]["params"]
        check(best in params_of(db, second["run_id"]), f"the earlier best {best} was not measured")

        # The same goal without the key learns nothing, though the earlier runs are there.
        third = run_json(["run", replay_goal(tmp, "RTX_3090", False)], db)
        check(all("related_runs" not in inputs for inputs, _ in explorer_decisions(db, third["run_id"])),
              "transfer is off unless the goal asks for it")
    print("ok")


if __name__ == "__main__":
    main()
