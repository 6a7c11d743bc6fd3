"""autotune run on the example goals: exit codes, JSON summary, database contents."""
import json
import os
import re

from loop_support import check, fail, goal_path, query, run, run_json, tempdir, write_goal

SKILLS = {"profile_analyzer", "kernel_generator", "param_explorer", "benchmark_runner", "orchestrator"}


def check_run(db, summary, expect_profiles=True):
    run_id = summary["run_id"]
    for key in ("run_id", "status", "goal_met", "stop_reason", "baseline", "best", "improvement", "evaluations",
                "cache_hits", "db"):
        check(key in summary, f"summary lacks {key}: {summary}")
    check(summary["status"] == "completed", f"status {summary['status']}: {summary['stop_reason']}")
    check(summary["best"]["variant"] and "latency_s" in summary["best"]["metrics"], f"best: {summary['best']}")
    for side in ("baseline", "best"):
        check("latency_s" in summary[side], f"{side} lacks latency_s: {summary[side]}")
        if expect_profiles:  # simulated targets report MFU; recorded spaces do not
            check("mfu_percent" in summary[side], f"{side} lacks mfu_percent: {summary[side]}")
    skills = {row[0] for row in query(db, "SELECT DISTINCT skill FROM decisions WHERE run = ?", (run_id,))}
    if summary["iterations"] > 0:
        check(SKILLS <= skills, f"decisions of every skill expected, got {skills}")
    trials = query(db, "SELECT status, verification, cache_hit, decision_seq FROM trials WHERE run = ?", (run_id,))
    check(len(trials) == summary["evaluations"], f"{len(trials)} trials stored, summary says {summary['evaluations']}")
    for status, verification, cache_hit, decision_seq in trials:
        check(decision_seq is not None, "a trial without the decision that proposed it")
        if status in ("ok", "cached") and expect_profiles:
            check(verification and '"passed":true' in verification.replace(" ", ""),
                  f"an ok trial that was not verified: {verification}")
    stored = query(db, "SELECT status, goal_met, best_trial FROM runs WHERE id = ?", (run_id,))[0]
    check(stored[0] == "completed" and stored[2] is not None, f"run row: {stored}")


def check_gemm_article(tmp, db):
    """The article's GEMM goal meets its 20%; explain traces a trial back to its finding and idea."""
    summary = run_json(["run", goal_path("gemm-article.yaml")], db)
    check_run(db, summary)
    check(summary["status"] == "completed" and summary["goal_met"], f"gemm-article: {summary['stop_reason']}")
    check(summary["improvement"] >= 0.20, f"gemm-article: improvement {summary['improvement']} < 0.20")
    print(f"gemm-article: {summary['baseline']['variant']} -> {summary['best']['variant']}, "
          f"{summary['improvement'] * 100:.1f}% throughput in {summary['evaluations']} evaluations")

    run_id = summary["run_id"]
    baseline = summary["baseline"]["trial"]
    trial = query(db, "SELECT t.id FROM trials t JOIN decisions d ON d.run = t.run AND d.seq = t.decision_seq "
                      "WHERE t.run = ? AND d.skill = 'param_explorer' ORDER BY t.id LIMIT 1", (run_id,))[0][0]
    explained = run_json(["explain", str(run_id), str(trial)], db)
    check(explained["trial"]["id"] == trial, f"explain --json: {explained['trial']}")
    check(explained["proposed_by"]["skill"] == "param_explorer", f"proposed by {explained['proposed_by']}")
    check(explained["chosen_by"] and explained["chosen_by"]["action"].startswith("try:"),
          f"no policy choice traced: {explained['chosen_by']}")
    idea, findings = explained["idea"], explained["findings"]
    check(idea and idea.get("id") and idea.get("finding"), f"no idea traced: {idea}")
    check(findings and findings[0]["kind"] == idea["finding"] and findings[0]["evidence"],
          f"no finding with evidence traced: {findings}")
    check(explained["analysis"]["skill"] == "profile_analyzer", f"analysis: {explained['analysis']}")
    check(explained["generation"]["skill"] == "kernel_generator", f"generation: {explained['generation']}")
    check(explained["best_before"]["id"] == baseline, f"compared with {explained['best_before']}")
    check(explained["verified"].startswith("passed"), f"verified: {explained['verified']}")

    proc = run(["explain", str(run_id), str(trial)], db)
    check(proc.returncode == 0, f"explain exited {proc.returncode}: {proc.stderr}")
    text = proc.stdout
    evidence_key = next(iter(findings[0]["evidence"]))
    for expected in ("why\n", f"  finding       {idea['finding']}: ", f"{evidence_key}=", f"  idea          {idea['id']} ",
                     "kernel_generator", f"best before   trial {baseline} ", "  change        latency ",
                     "  verified      passed", "  result        "):
        check(expected in text, f"explain lacks {expected!r}:\n{text}")
    check("0 unmeasured configurations fit" not in text, f"misleading explorer rationale:\n{text}")

    # An unknown skill is one line naming the accepted ones, exit 2.
    proc = run(["log", str(run_id), "--skill", "nosuch"], db)
    err = proc.stderr.strip()
    check(proc.returncode == 2 and "\n" not in err and "nosuch" in err and "accepted:" in err and
          "profile_analyzer" in err and proc.stdout == "", f"log --skill nosuch: {proc.returncode} {err!r}")
    proc = run(["log", str(run_id), "--skill", "profile_analyzer"], db)
    check(proc.returncode == 0 and "profile_analyzer" in proc.stdout, f"log --skill: {proc.stdout}")

    # Every candidate timing out fails the run: exit 1, status failed, explain names the reason. A fresh
    # database, since the cache would serve the measurements above.
    db = os.path.join(tmp, "timeout.db")
    with open(goal_path("gemm-article.yaml")) as f:
        text = f.read()
    goal = write_goal(tmp, "timeout.yaml", text.replace("name: gemm-article", "name: gemm-timeout") +
                      "timeout_s: 0.000001\n")
    proc = run(["run", goal, "--json"], db)
    check(proc.returncode == 1, f"a failed run exited {proc.returncode}: {proc.stderr[-1000:]}")
    failed = json.loads(proc.stdout)
    check(failed["status"] == "failed" and not failed["goal_met"] and "timeout" in failed["stop_reason"],
          f"failed run summary: {failed}")
    trial = query(db, "SELECT id FROM trials WHERE run = ? ORDER BY id LIMIT 1", (failed["run_id"],))[0][0]
    proc = run(["explain", str(failed["run_id"]), str(trial)], db)
    check(proc.returncode == 0 and "  verified      not verified: timeout" in proc.stdout,
          f"explain of a timed-out trial:\n{proc.stdout}")


def check_iterations_all_measure(tmp, db):
    """A replay run held to an unreachable bound spends its whole budget and measures something in each of its
    iterations: none is spent on an idea that measured nothing (tests/unit/orchestrator/loop_test.cpp forces that
    case). Without a profile no finding proposes anything, so the handover takes the budget after the baseline."""
    with open(goal_path("replay-convolution.yaml")) as f:
        text = f.read()
    cachefile = os.path.abspath(os.path.join(os.path.dirname(goal_path("replay-convolution.yaml")),
                                             text.split("cachefile: ")[1].split()[0]))
    text = text.replace(text.split("cachefile: ")[1].split("\n")[0], cachefile)
    text = text.replace("improvement: 0.80", "latency_s: 0.0001")  # below the recorded optimum
    summary = run_json(["run", write_goal(tmp, "replay-unreachable.yaml", text)], db)
    check(summary["stop_reason"].startswith("evaluation budget") and summary["evaluations"] == 120,
          f"replay-unreachable: {summary['stop_reason']} after {summary['evaluations']}")
    handover = query(db, "SELECT COUNT(*) FROM decisions WHERE run = ? AND action = 'try:handover'",
                     (summary["run_id"],))[0][0]
    check(handover == 1, f"replay-unreachable: {handover} handovers")
    measured = {row[0] for row in query(db, "SELECT DISTINCT iteration FROM trials WHERE run = ?",
                                        (summary["run_id"],))}
    missing = [i for i in range(1, summary["iterations"] + 1) if i not in measured]
    check(not missing, f"iterations that measured nothing: {missing}")


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")

        # The profiler article's exp kernel: at least 2x over the naive variant.
        summary = run_json(["run", goal_path("exp-profiler.yaml"), "--jobs", "2"], db)
        check_run(db, summary)
        base, best = summary["baseline"]["metrics"]["latency_s"], summary["best"]["metrics"]["latency_s"]
        print(f"exp-profiler: {summary['baseline']['variant']} {base:.3e} s -> {summary['best']['variant']} "
              f"{best:.3e} s ({base / best:.2f}x) in {summary['evaluations']} evaluations; {summary['stop_reason']}")
        check(summary["baseline"]["variant"] == "naive", "the exp goal starts from the naive variant")
        check(summary["baseline"]["params"] == {}, f"no placeholder parameter: {summary['baseline']['params']}")
        text = run(["trials", str(summary["run_id"])], db).stdout
        check("_=0" not in text and "(no parameters)" in text, f"trials table shows a placeholder: {text}")
        check(best <= base, "the best is slower than the baseline")
        # The tiled space (192 configurations) far exceeds the budget (40): the loop must not run out of ideas.
        check(not summary["stop_reason"].startswith("no idea left"),
              f"the exp loop gave up with budget left: {summary['stop_reason']} after {summary['evaluations']}")
        # 2x is the article's figure; whether the simulated core allows it is the sweep's to say.
        sweep = run_json(["sweep", goal_path("exp-profiler.yaml"), "--jobs", "2", "--top", "1"], db)
        optimum = sweep["top"][0]["metrics"]["latency_s"]
        print(f"exp-profiler: sweep optimum {optimum:.3e} s = {base / optimum:.2f}x over naive")
        if base / optimum >= 2.0:
            check(base / best >= 2.0, f"exp: 2x is possible ({base / optimum:.2f}x) but the loop got {base / best:.2f}x")
            check(summary["goal_met"], "the exp goal (2x) should be met")
        else:
            print(f"exp-profiler: 2x over naive is unreachable on this model (best possible {base / optimum:.2f}x)")
            check(best <= optimum * 1.05, "the loop ended more than 5% from the sweep's optimum")

        # Something the search must earn: from a slow tiled start (tile 64, no pipelining), reach within 5% of
        # the sweep's optimum; the start alone is far from it.
        with open(goal_path("exp-profiler.yaml")) as f:
            text = f.read()
        slow = text.replace("name: exp-profiler", "name: exp-from-slow").replace(
            "  variant: naive", "  variant: tiled\n  params: {tile_size: 64, pipeline_depth: 1, unroll_factor: 1}")
        slow = re.sub(r"(?m)^  improvement: .*$", "  improvement: 0.65", slow)
        check("exp-from-slow" in slow and "tile_size: 64" in slow and "improvement: 0.65" in slow,
              "exp-profiler.yaml changed shape")
        earned = run_json(["run", write_goal(tmp, "exp_slow.yaml", slow), "--jobs", "2"], db)
        start, reached = earned["baseline"]["metrics"]["latency_s"], earned["best"]["metrics"]["latency_s"]
        print(f"exp from a slow start: {start:.3e} s -> {reached:.3e} s in {earned['evaluations']} evaluations "
              f"(sweep optimum {optimum:.3e} s)")
        check(start >= 2 * optimum, f"the slow start is not slow: {start:.3e} s against the optimum {optimum:.3e} s")
        check(reached <= 1.05 * optimum and earned["goal_met"],
              f"from the slow start the loop ended at {reached:.3e} s, more than 5% from the optimum {optimum:.3e} s")

        # Running the same goal again re-uses every measurement and reaches the same best.
        again = run_json(["run", goal_path("exp-profiler.yaml"), "--jobs", "2"], db)
        check(again["cache_hits"] == again["evaluations"] and again["cache_hits"] > 0,
              f"a re-run should be served from the cache: {again['cache_hits']} of {again['evaluations']}")
        check(again["best"]["params"] == summary["best"]["params"], "the re-run found another best")

        # Text output names best, baseline, improvement, run id and database.
        proc = run(["run", goal_path("quickstart.yaml"), "--jobs", "2"], db)
        check(proc.returncode == 0, f"quickstart exited {proc.returncode}: {proc.stderr[-1000:]}")
        for word in ("best:", "baseline:", "improvement:", "database:", "run ", "MFU"):
            check(word in proc.stdout, f"quickstart output lacks '{word}': {proc.stdout}")
        check("iteration" in proc.stderr, "no progress lines on stderr")
        # A structural probe of several variants names them all.
        check("[search structural hoisted, blocked_mn, blocked_mnk]" in proc.stderr,
              f"the progress label should list every probed variant: {proc.stderr[-1500:]}")

        # A GEMM from the tutorial's tiled step (small shape to stay fast).
        gemm = write_goal(tmp, "gemm.yaml", """
name: gemm-small
kernel: {family: gemm, shape: {M: 512, N: 1024, K: 1024}, dtype: bf16}
objective: throughput
goal: {improvement: 0.20}
max_iterations: 3
budget: {evaluations: 16}
search:
  strategy: random
  space: {tile_m: [32, 64, 128], tile_k: [32, 64, 128], unroll_factor: [1, 2, 4], pipeline_depth: [1, 2, 3]}
start: {variant: tiled}
parallel: 2
""")
        summary = run_json(["run", gemm], db)
        check_run(db, summary)
        print(f"gemm-small: {summary['improvement'] * 100:.1f}% throughput, best {summary['best']['variant']}")

        check_gemm_article(tmp, db)

        # Replay: a recorded space, no profiles.
        summary = run_json(["run", goal_path("replay-convolution.yaml")], db)
        check_run(db, summary, expect_profiles=False)
        check(summary["improvement"] > 0, "replay: no improvement over the first recorded configuration")
        check_iterations_all_measure(tmp, db)

        # --json prints exactly one JSON object and nothing else on stdout.
        proc = run(["run", goal_path("quickstart.yaml"), "--json"], db)
        check(proc.returncode == 0 and proc.stdout.count("\n") == 1, f"--json stdout: {proc.stdout!r}")
    print("ok")


if __name__ == "__main__":
    main()
