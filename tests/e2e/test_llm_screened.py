"""An LLM's kernel source in a screened run (docs/llm.md, "Kernel sources"; docs/loop.md, "Screened
tuning"): the tuning target is a stand-in device (the simulator at bench/targets/trn2-standin.yaml), the
screen simulates trn2. A source the LLM writes is simulated on the screen's target before the device sees
it, and measured on the device only when the screen keeps it: the fake endpoint of test_llm.py answers with
the current best's own source (kept: the screen predicts it as the best) and with a slow configuration's
source (left out: predicted slower than the best beyond the margin; no trial, and the log says why)."""
import json
import os
import subprocess

from loop_support import BIN, SOURCE, check, fail, query, run, tempdir, write_goal
from test_llm import KEY, KEY_ENV, MODEL, FakeEndpoint

STANDIN = os.path.join(SOURCE, "bench", "targets", "trn2-standin.yaml")


def goal_text(port):
    return f"""name: llm-screened
kernel: {{family: gemm, shape: {{M: 256, N: 512, K: 512}}, dtype: bf16}}
target: {STANDIN}
screen: {{target: trn2, keep: 2, propose: 12}}
objective: latency
goal: {{improvement: 0.95}}
max_iterations: 2
budget: {{evaluations: 8, wall_time_s: 120}}
search: {{strategy: random, batch_size: 2}}
start: {{variant: tiled}}
variants: [tiled]
parallel: 2
seed: 5
llm: {{endpoint: "http://127.0.0.1:{port}/v1", model: {MODEL}, api_key_env: {KEY_ENV}, timeout_s: 5, max_calls: 3, kernel_sources: 1}}
"""


def run_case(directory, name, server):
    goal = write_goal(directory, f"{name}.yaml", goal_text(server.port))
    db = os.path.join(directory, f"{name}.db")
    proc = run(["run", goal, "--json"], db, timeout=300,
               env_extra={KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    if proc.returncode != 0:
        fail(f"{name}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    rows = query(db, "SELECT seq, proposer, evidence, rationale, outcome FROM decisions WHERE run = ? AND "
                     "action = 'propose_source'", (summary["run_id"],))
    check(len(rows) == 1, f"{name}: {len(rows)} propose_source decisions")
    seq, proposer, evidence, rationale, outcome = rows[0]
    return db, summary, seq, proposer, json.loads(evidence), rationale, outcome


def main():
    with tempdir() as directory:
        # Kept: the LLM answers with the best's own source; the screen predicts it as the best, within the
        # bound, so the device measures it, and the log holds both figures.
        server = FakeEndpoint("source")
        db, summary, seq, proposer, evidence, rationale, outcome = run_case(directory, "kept", server)
        server.stop()
        check(proposer == f"llm:{MODEL}" and outcome == "accepted", f"kept: {proposer} {outcome} {rationale}")
        screen = evidence.get("screen")
        check(screen and screen["screen_target"] == "trn2", f"kept: the source was not screened: {evidence}")
        check(screen["simulated_s"] > 0 and screen["predicted_s"] <= screen["bound"]["bound_s"] and screen["chosen"],
              f"kept: {screen}")
        trials = query(db, "SELECT status, metrics FROM trials WHERE run = ? AND variant = ? AND decision_seq = ?",
                       (summary["run_id"], evidence["kernel"]["name"], seq))
        check(len(trials) == 1 and trials[0][0] == "ok", f"kept: trial {trials}")
        measured = json.loads(trials[0][1])["latency_s"]
        check(screen["measured_s"] == measured, f"kept: the device's figure {measured} beside the screen's: {screen}")
        check(abs(measured / screen["simulated_s"] - 1) > 0.01, "kept: the stand-in is not the screen's machine")

        # Left out: a slow configuration's source (tiles at their smallest, no pipelining). The screen predicts
        # it slower than the best beyond its margin: not measured on the device, no trial, and the log says so.
        slow = os.path.join(directory, "slow.cc")
        proc = subprocess.run([BIN, "export", "--kernel", "gemm", "--variant", "tiled", "--shape",
                               "M=256,N=512,K=512", "--dtype", "bf16", "--target", "trn2", "--param", "tile_m=32",
                               "--param", "tile_n=64", "--param", "tile_k=32", "--param", "pipeline_depth=1",
                               "-o", slow], capture_output=True, text=True, timeout=120)
        check(proc.returncode == 0, f"export: {proc.stderr}")
        server = FakeEndpoint("fixed_source", fixed_source=open(slow).read())
        db, summary, seq, proposer, evidence, rationale, outcome = run_case(directory, "left_out", server)
        server.stop()
        screen = evidence.get("screen")
        check(screen and screen["predicted_s"] > screen["bound"]["bound_s"] and not screen["chosen"],
              f"left out: {evidence}")
        check(outcome == "not measured on the device: left out by the screen", f"left out: outcome {outcome}")
        check("was not measured on the device: the screen predicts it" in rationale and "margin" in rationale,
              f"left out: rationale {rationale}")
        check(evidence["llm"]["status"] == "screened_out", f"left out: {evidence['llm']}")
        trials = query(db, "SELECT id FROM trials WHERE run = ? AND (variant = ? OR decision_seq = ?)",
                       (summary["run_id"], evidence["kernel"]["name"], seq))
        check(not trials, f"left out: the device measured it: {trials}")
        calls = query(db, "SELECT accepted, reject_reason FROM llm_calls WHERE run = ? AND reject_reason LIKE "
                          "'%screen%'", (summary["run_id"],))
        check(len(calls) == 1 and calls[0][0] == 0, f"left out: llm_calls {calls}")

        # A command target (a device's own program) cannot take a C++ source: none is asked for, and the log
        # says so plainly.
        with open(os.path.join(directory, "device.py"), "w") as f:
            f.write('import json, sys\nprint(json.dumps({"latency_s": 1e-3 / int(sys.argv[1])}))\n')
        server = FakeEndpoint("source")
        goal = write_goal(directory, "command.yaml", f"""name: llm-command
target: {{kind: command, argv: [python3, device.py, "{{x}}"]}}
search: {{strategy: grid, space: {{x: [1, 2, 3]}}}}
start: {{params: {{x: 1}}}}
max_iterations: 1
budget: {{evaluations: 3}}
llm: {{endpoint: "http://127.0.0.1:{server.port}/v1", model: {MODEL}, api_key_env: {KEY_ENV}, timeout_s: 5, max_calls: 3, kernel_sources: 1}}
""")
        db = os.path.join(directory, "command.db")
        proc = run(["run", goal, "--json"], db, timeout=120,
                   env_extra={KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        server.stop()
        check(proc.returncode == 0, f"command: exit {proc.returncode}: {proc.stderr[-2000:]}")
        rows = query(db, "SELECT rationale, outcome FROM decisions WHERE action = 'propose_source'")
        check(len(rows) == 1 and rows[0][1] == "skipped" and "no LLM source goes to the device" in rows[0][0],
              f"command: {rows}")
    print("ok")


if __name__ == "__main__":
    main()
