"""A screened run on a noisy device, killed mid-way and resumed, replays as the uninterrupted run with the
same seed did: the same trials with the same figures, the same screen decisions (rankings, left-out ideas,
feedback and corrections), the same measurements again, the same result; each device measurement counts
once before and after the resume, and none is measured twice.

The device is a command target standing in for a trn2: each candidate simulated on
bench/targets/trn2-standin.yaml (trn2 with its fitted constants moved ~30%), its five runs spread +-1% by a
noise seeded by the candidate and the run, so that a run replays; a win of more than three noise widths is
measured again (docs/goals.md, "Noisy measurements"). The screen simulates trn2."""
import hashlib
import json
import os
import random
import signal
import subprocess
import time

from loop_support import BIN, SOURCE, check, query, run_json, tempdir, write_goal

STANDIN = os.path.join(SOURCE, "bench", "targets", "trn2-standin.yaml")

DEVICE = r"""#!/usr/bin/env python3
import hashlib, json, os, subprocess, sys
params = json.loads(os.environ["AUTOTUNE_PARAMS"])
key = ",".join(f"{k}={params[k]}" for k in sorted(params))
cache = "sim-" + hashlib.sha256(key.encode()).hexdigest()[:16] + ".json"
if not os.path.exists(cache):
    argv = [BIN, "profile", "--kernel", "gemm", "--variant", "tiled", "--target", STANDIN,
            "--shape", "M=256,N=512,K=512", "--dtype", "bf16", "--no-verify", "--json"]
    for k, v in params.items():
        argv += ["--param", f"{k}={v}"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(1)
    profile = json.loads(proc.stdout)
    latency = profile["latency_s"] if "latency_s" in profile else profile["summary"]["latency_s"]
    with open(cache + ".tmp", "w") as f:
        json.dump(latency, f)
    os.replace(cache + ".tmp", cache)
latency = json.load(open(cache))
seed = hashlib.sha256(f"{key}/{os.environ['AUTOTUNE_REPEAT']}".encode()).digest()
noise = (int.from_bytes(seed[:8], "big") / 2**64 * 2 - 1) * 0.01
print(json.dumps({"latency_s": latency * (1 + noise)}))
"""

GOAL = """
name: screened-resume
kernel: {family: gemm}
target:
  kind: command
  argv: [python3, device.py]
  repeats: 5
  timeout_s: 60
screen:
  target: trn2
  keep: 2
  propose: 12
  kernel: {family: gemm, variant: tiled, shape: {M: 256, N: 512, K: 512}, dtype: bf16}
search:
  strategy: bayes
  batch_size: 2
  space: {tile_m: [64, 128], tile_n: [128, 256, 512], tile_k: [64, 128], unroll_factor: [1, 2], pipeline_depth: [1, 2, 3]}
start: {params: {tile_m: 64, tile_n: 128, tile_k: 64, unroll_factor: 1, pipeline_depth: 1}}
objective: latency
goal: {improvement: 0.9}
max_iterations: 4
budget: {evaluations: 16}
parallel: 2
seed: 3
"""

# What a decision says, compared between the runs: the runner's own counts (measured now or served from
# committed trials) differ by design, and durations never match.
RUNNER_COUNTS = {"measured", "resumed", "cache_hits", "reused_in_run"}


def trials_of(db, run_id):
    return query(db, "SELECT id, iteration, variant, params, status, metrics, repeats, decision_seq FROM trials "
                     "WHERE run = ? ORDER BY id", (run_id,))


def decisions_of(db, run_id):
    out = []
    for seq, skill, action, proposer, inputs, evidence, rationale, outcome in query(
            db, "SELECT seq, skill, action, proposer, inputs, evidence, rationale, outcome FROM decisions "
                "WHERE run = ? ORDER BY seq", (run_id,)):
        evidence = json.loads(evidence or "null")
        if action == "measure":
            evidence = {k: v for k, v in evidence.items() if k not in RUNNER_COUNTS}
            rationale = None
        if action == "finish":
            evidence = {k: v for k, v in evidence.items() if k not in ("resumed_trials", "cache_hits")}
        out.append((seq, skill, action, proposer, json.loads(inputs or "null"), evidence, rationale, outcome))
    return out


def main():
    with tempdir() as tmp:
        reference_dir = os.path.join(tmp, "reference")
        killed_dir = os.path.join(tmp, "killed")
        for directory in (reference_dir, killed_dir):  # each with its own device folder (its cache of figures)
            os.makedirs(directory)
            with open(os.path.join(directory, "device.py"), "w") as f:
                f.write(DEVICE.replace("[BIN,", f"[{os.path.abspath(BIN)!r},").replace("STANDIN,", f"{STANDIN!r},"))
            write_goal(directory, "goal.yaml", GOAL)

        reference_db = os.path.join(tmp, "reference.db")
        reference = run_json(["run", os.path.join(reference_dir, "goal.yaml"), "--no-cache"], reference_db)
        ref_id = reference["run_id"]
        ref_trials = trials_of(reference_db, ref_id)
        again = [i for i, t in enumerate(ref_trials) if "remeasured" in json.loads(t[5] or "{}")]
        check(again, "the scenario needs a measurement again (a win beyond the noise)")
        check([d for d in decisions_of(reference_db, ref_id) if d[2] == "screen"], "the screen ranked rounds")
        check(reference["evaluations"] == len(ref_trials), "every device measurement is one evaluation")

        # Kill at a random moment after the first measurement again is committed (so that the resume replays
        # it), or before it; the seed is printed to replay a failure (AUTOTUNE_KILL_SEED).
        kill_seed = int(os.environ.get("AUTOTUNE_KILL_SEED", random.SystemRandom().randrange(1 << 30)))
        chooser = random.Random(kill_seed)
        kill_after = chooser.randint(again[0] + 1, max(again[0] + 1, len(ref_trials) - 1))
        delay = chooser.uniform(0, 0.3)
        print(f"kill seed {kill_seed}: after {kill_after} trials + {delay * 1000:.0f} ms")
        db = os.path.join(tmp, "killed.db")
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        goal = os.path.join(killed_dir, "goal.yaml")
        proc = subprocess.Popen([BIN, "run", goal, "--db", db, "--no-cache"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
            try:
                if query(db, "SELECT COUNT(*) FROM trials")[0][0] >= kill_after:
                    time.sleep(delay)
                    break
            except Exception:
                continue
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        run_id = query(db, "SELECT id FROM runs")[0][0]
        committed = query(db, "SELECT COUNT(*) FROM trials WHERE run = ?", (run_id,))[0][0]
        print(f"killed with {committed} trials committed (reference run: {len(ref_trials)})")

        resumed = run_json(["run", goal, "--resume", str(run_id), "--no-cache"], db)
        check(resumed["status"] == "completed", f"resumed: {resumed['status']} {resumed['stop_reason']}")
        check(resumed["resumed_trials"] == committed,
              f"{committed} committed trials, {resumed['resumed_trials']} served from them")
        check(resumed["measured"] + resumed["resumed_trials"] == resumed["evaluations"],
              f"measured {resumed['measured']} + resumed {resumed['resumed_trials']} != {resumed['evaluations']}")
        check(resumed["evaluations"] == reference["evaluations"],
              f"{resumed['evaluations']} evaluations after the resume, {reference['evaluations']} uninterrupted")
        for key in ("stop_reason", "goal_met", "improvement", "iterations", "screen_simulations"):
            check(resumed.get(key) == reference.get(key), f"{key}: {resumed.get(key)} against {reference.get(key)}")
        check(resumed["best"] == reference["best"], f"best {resumed['best']} against {reference['best']}")

        # The same trials, with the same figures, and no measurement twice.
        got = trials_of(db, run_id)
        check(len(got) == len(ref_trials), f"{len(got)} trials, {len(ref_trials)} uninterrupted")
        for mine, theirs in zip(got, ref_trials):
            check(mine == theirs, f"trial {mine[0]} differs:\n  {mine}\n  {theirs}")

        # The same decisions: every screen ranking, idea screening, feedback and correction, every
        # measurement again, in the same order with the same evidence and outcomes.
        mine, theirs = decisions_of(db, run_id), decisions_of(reference_db, ref_id)
        check(len(mine) == len(theirs), f"{len(mine)} decisions, {len(theirs)} uninterrupted")
        for a, b in zip(mine, theirs):
            check(a == b, f"decision {a[0]} ({a[1]} / {a[2]}) differs:\n  {a}\n  {b}")
        check(any(d[2] == "measure_again" for d in mine), "the resumed run measured a win again")
    print("ok")


if __name__ == "__main__":
    main()
