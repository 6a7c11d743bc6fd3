"""report, trace and serve from the command line: the files they write, and bad input as one line with exit 2
(an unknown run or trial, a port in use, a file that is not a database). The pages themselves are checked in
a real browser by tests/browser/report.test.mjs."""
import json
import os
import re
import subprocess
import time

from loop_support import BIN, check, goal_path, query, run, run_json, tempdir, write_goal


def page_data(html):
    """The run documents a report page embeds (report/report_data.hpp)."""
    text = re.search(r'<script type="application/json" id="autotune-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(text)


def check_mfu_goal(tmp, db):
    """An MFU goal is named in the page's header data (it read `goal -`), and its bound drawn as the
    latency at which the baseline's work reaches it."""
    goal = write_goal(tmp, "mfu.yaml", """
name: mfu-goal
kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}
objective: mfu
goal: {mfu_percent: 60}
max_iterations: 1
budget: {evaluations: 4}
""")
    run_id = str(run_json(["run", goal], db)["run_id"])
    page = os.path.join(tmp, "mfu.html")
    check(run(["report", run_id, "--no-timelines", "-o", page], db).returncode == 0, "report of the MFU run")
    doc = page_data(open(page).read())["runs"][0]
    check(doc.get("goal") == "MFU >= 60%", f"the MFU goal reads {doc.get('goal')!r}")
    baseline = query(db, "SELECT metrics FROM trials WHERE id = ?", (doc["baseline"]["trial"],))[0][0]
    metrics = json.loads(baseline)
    expected = metrics["latency_s"] * metrics["mfu_percent"] / 60
    check(abs(doc.get("goal_latency_s", 0) - expected) <= 1e-9 * expected,
          f"the MFU goal's line at {doc.get('goal_latency_s')} s, expected {expected}")


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        result = run_json(["run", goal_path("quickstart.yaml")], db)
        run_id = str(result["run_id"])

        page = os.path.join(tmp, "report.html")
        proc = run(["report", run_id, "-o", page], db)
        check(proc.returncode == 0 and "needs no network" in proc.stdout, proc.stdout + proc.stderr)
        html = open(page).read()
        check("http://" not in html.split("<script>")[0] and "<script src" not in html, "the page loads something")
        check(html.count('"trial":') >= result["evaluations"], "the page lacks the run's trials")
        quick = os.path.join(tmp, "quick.html")
        check(run(["report", run_id, "--no-timelines", "-o", quick], db).returncode == 0, "--no-timelines")
        check('"timelines"' not in open(quick).read(), "--no-timelines still re-simulated")

        data = page_data(html)
        check(data["runs"][0].get("goal") == "20% lower latency than the baseline",
              f"the latency goal reads {data['runs'][0].get('goal')!r}")
        check_mfu_goal(tmp, db)

        trace = os.path.join(tmp, "trace.json")
        best = str(result["best"]["trial"])
        proc = run(["trace", run_id, best, "-o", trace], db)
        check(proc.returncode == 0, proc.stderr)
        events = json.load(open(trace))["traceEvents"]
        check(len(events) > 10 and any(e.get("ph") == "X" for e in events), f"{len(events)} trace events")

        for args, expected in ((["report", "999"], "run 999 not found"),
                               (["trace", run_id, "99999"], "trial 99999 not found"),
                               (["serve", "--port", "70000"], "--port 70000 is out of range")):
            proc = run(args, db)
            check(proc.returncode == 2 and expected in proc.stderr and proc.stderr.count("\n") == 1,
                  f"{args}: {proc.returncode} {proc.stderr!r}")
        not_db = os.path.join(tmp, "notes.txt")
        open(not_db, "w").write("not a database\n")
        proc = run(["serve", "--port", "0"], not_db)
        check(proc.returncode == 2 and "not an SQLite database" in proc.stderr, proc.stderr)

        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        server = subprocess.Popen([BIN, "serve", "--db", db, "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
        try:
            line = server.stdout.readline()
            check("serving" in line and "http://127.0.0.1:" in line, f"serve printed {line!r}")
            port = re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1)
            proc = run(["serve", "--port", port], db)
            check(proc.returncode == 2 and "choose another --port" in proc.stderr, proc.stderr)
        finally:
            server.kill()
    print("ok")


if __name__ == "__main__":
    main()
