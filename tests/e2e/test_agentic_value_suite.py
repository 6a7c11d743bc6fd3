"""bench_agentic_value --suite: a tiny suite's tasks compared (loop against flat bayes, each within 5% of
an exhaustive sweep's optimum) on the targets and tasks chosen, each task's goal the one `autotune suite`
makes (the flat bayes run stores the very goal text the suite's run stores), with --seeds the two paired
seed by seed, a task that is not yet a family listed and skipped, and mistakes in the selection as one
line with exit 2 before anything is measured."""
import os
import re
import subprocess

from loop_support import BIN, check, query, run, tempdir, write_goal

BENCH = os.path.join(os.path.dirname(os.path.abspath(BIN)), "bench", "bench_agentic_value")

SUITE = """
name: tiny
targets: [trn1, trn2]
seed: 3
budget: {evaluations: 4}
max_iterations: 2
tasks:
  - name: act
    kernel: {family: silu, shape: {rows: 256, cols: 1024}, dtype: fp32}
    start: {variant: naive}
  - name: scan
    unavailable: needs a scan instruction
  - name: mm
    kernel: {family: gemm, shape: {M: 256, N: 512, K: 256}, dtype: bf16}
    start: {variant: tiled}
"""


def bench(args, tmp):
    env = dict(os.environ)
    env["TMPDIR"] = tmp  # the bench's sweep cache lives under $TMPDIR
    return subprocess.run([BENCH] + args, capture_output=True, text=True, timeout=600, env=env)


def one_bench_error(proc, *needles):
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 2, f"exit {proc.returncode} (2 expected): {proc.stderr}")
    check(len(lines) == 1 and lines[0].startswith("bench_agentic_value: error: "), f"one error line: {proc.stderr!r}")
    for needle in needles:
        check(needle in lines[0], f"{needle!r} not in {lines[0]!r}")


def main():
    check(os.path.exists(BENCH), f"{BENCH} is built")
    with tempdir() as tmp:
        suite = write_goal(tmp, "tiny.yaml", SUITE)
        cache = os.path.join(tmp, "autotune-bench-agentic-value", "shared.db")

        one_bench_error(bench(["--suite", suite, "--tasks", "act,nope"], tmp), "--tasks", "'nope'", "act, scan, mm")
        one_bench_error(bench(["--suite", suite, "--targets", "trn3"], tmp), "--targets", "'trn3'", "trn1, trn2")
        one_bench_error(bench(["--suite", write_goal(tmp, "bad.yaml", SUITE.replace("silu", "sliu"))], tmp),
                        "bad.yaml:9:", "sliu")
        one_bench_error(bench(["--tasks", "act"], tmp), "need --suite")
        check(not os.path.exists(cache), "nothing was measured before the selection was checked")

        proc = bench(["--suite", suite, "--tasks", "act,scan", "--targets", "trn2"], tmp)
        check(proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}")
        out = proc.stdout
        check("act/trn1" not in out and not re.search(r"^mm/", out, re.M), f"only the chosen goals: {out}")
        check(re.search(r"^scan/trn2\s+not yet a family: needs a scan instruction$", out, re.M), out)
        row = re.search(r"^act/trn2\s+(\d+)\s+4\s+([0-9.e+-]+) s\s+(\S+)\s+(\S+)", out, re.M)
        check(row, f"a row for act on trn2 with its space, the suite's budget and the optimum: {out}")
        space = int(row.group(1))
        sweeps = query(cache, "SELECT COUNT(*) FROM trials t JOIN runs r ON t.run = r.id "
                              "WHERE r.goal_name LIKE '%sweep%'")[0][0]
        check(sweeps == space, f"the sweep measured the {space} configurations: {sweeps}")
        for figure in (row.group(3), row.group(4)):
            check(re.fullmatch(r"\d+|not", figure) and (figure == "not" or 1 <= int(figure) <= 4),
                  f"evaluations to within 5% within the budget of 4: {row.group(0)}")

        # --limit: a sample of the space stands for it, and the row says so.
        proc = bench(["--suite", suite, "--tasks", "act", "--targets", "trn1", "--limit", "5"], tmp)
        check(proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}")
        check(re.search(rf"^act/trn1\s+{space}\s+4\s", proc.stdout, re.M) and
              f"(the optimum of a sample of 5 of the {space} configurations: --limit)" in proc.stdout, proc.stdout)
        sampled = query(cache, "SELECT COUNT(*) FROM trials t JOIN runs r ON t.run = r.id WHERE r.goal_name LIKE "
                               "'%sweep%' AND r.goal_yaml LIKE '%target: trn1%'")[0][0]
        check(sampled == 5, f"the sweep measured a sample of 5: {sampled}")

        # The goal is the suite's own: the flat bayes run (seed 3, the suite's) stores the goal text
        # `autotune suite` stores for the same task and target.
        flat = query(cache, "SELECT goal_yaml, seed FROM runs WHERE goal_name = 'tiny/act (flattened bayes)' "
                            "AND goal_yaml LIKE '%target: trn2%'")
        check(len(flat) == 1 and "\ntarget: trn2\n" in flat[0][0] and flat[0][1] == 3, f"one flat bayes run on trn2: {flat}")
        # Flat bayes measures (and counts) the goal's start point first, as the loop does.
        firsts = query(cache, "SELECT r.goal_name, t.variant, t.params FROM trials t JOIN runs r ON t.run = r.id "
                              "WHERE r.goal_name IN ('tiny/act', 'tiny/act (flattened bayes)') AND "
                              "r.goal_yaml LIKE '%target: trn2%' AND t.id = (SELECT MIN(id) FROM trials "
                              "WHERE run = r.id) ORDER BY r.goal_name")
        check(len(firsts) == 2 and firsts[0][1:] == firsts[1][1:] and firsts[0][1] == "naive",
              f"both runs start at the start point: {firsts}")
        db = os.path.join(tmp, "suite.db")
        proc = run(["suite", suite, "--jobs", "1"], db, timeout=600)
        check(proc.returncode == 0, f"autotune suite exited {proc.returncode}: {proc.stderr}")
        suite_goal = query(db, "SELECT goal_yaml FROM runs WHERE goal_name = 'tiny/act' AND target LIKE 'trn2%'")
        check(len(suite_goal) == 1 and suite_goal[0][0] == flat[0][0],
              f"the same goal as `autotune suite`:\n{flat[0][0]}\n---\n{suite_goal}")

        # --seeds: medians, and a line pairing the loop with flat bayes seed by seed that agrees with the
        # per-seed lines (a run not within 5% in the budget is later than any that is).
        proc = bench(["--suite", suite, "--tasks", "act", "--targets", "trn2", "--seeds", "3"], tmp)
        check(proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}")
        seeds = re.findall(r"^  seed (\d+)\s+loop (\d+|not within \d+)\s+bayes (\d+|not within \d+)", proc.stdout, re.M)
        check([int(s) for s, _, _ in seeds] == [3, 4, 5], f"the suite's seed and the two following: {proc.stdout}")
        rank = lambda figure: float("inf") if figure.startswith("not") else int(figure)
        expected = [sum(1 for _, a, b in seeds if compare(rank(a), rank(b))) for compare in
                    (lambda a, b: a < b, lambda a, b: a == b, lambda a, b: a > b)]
        paired = re.search(r"^\s+\(to 5%, seed by seed: the loop sooner in (\d+), level in (\d+), later in (\d+) of 3\)$",
                           proc.stdout, re.M)
        check(paired and [int(g) for g in paired.groups()] == expected,
              f"the pairing {expected} (sooner, level, later) under the row: {proc.stdout}")
    print("ok")


if __name__ == "__main__":
    main()
