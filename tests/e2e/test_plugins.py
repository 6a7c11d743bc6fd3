"""Plugin skills end to end: the example profile analyzer amends the built-in analysis and its finding is in the
decision log under its name; plugins that crash, hang past their timeout, answer malformed JSON or propose
ideas outside the catalog are logged as such while the run completes on the built-in path."""
import json
import os
import re
import stat
import subprocess

from loop_support import BIN, SOURCE, check, goal_path, quickstart_with_analyzer, run, run_json, tempdir, write_goal

CRASH = """#!/usr/bin/env python3
import sys
sys.stdin.readline()
print("crash plugin: giving up on purpose", file=sys.stderr)
sys.exit(3)
"""

HANG = """#!/usr/bin/env python3
import sys, time
sys.stdin.readline()
time.sleep(600)
"""

MALFORMED = """#!/usr/bin/env python3
import sys
for line in sys.stdin:
    print("planning... {not json", flush=True)
"""

# A well-formed reply whose result names a variant the catalog does not have.
UNKNOWN_VARIANT = """#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    reply = {"result": {"ideas": [{"id": "x", "kind": "structural", "variant": "no_such_variant"}]},
             "decision": {"action": "propose", "rationale": "try a variant that does not exist"}}
    print(json.dumps(reply), flush=True)
"""

# Offers the best's own configuration as its one idea every time: it settles at once (measured already), and
# offering it again must not hold the loop.
AGAIN = """#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    best = (json.loads(line).get("request") or {})["best"]
    idea = {"id": "again", "kind": "explore", "variant": best["variant"],
            "region": {name: [value] for name, value in best["params"].items()}}
    print(json.dumps({"result": {"ideas": [idea]}, "decision": {"action": "propose", "rationale": "again"}}),
          flush=True)
"""

# Untrusted text: escape sequences that retitle the terminal and clear the screen and a carriage return, in a
# valid reply's rationale and evidence (JSON carries them as \\u001b...); then bytes that are not UTF-8 on
# stdout and stderr before crashing.
HOSTILE = """#!/usr/bin/env python3
import json, sys
for count, line in enumerate(sys.stdin):
    request = json.loads(line).get("request") or {}
    if count == 0:
        noise = "\\x1b]0;pwned\\x07\\x1b[2J\\rclear"
        print(json.dumps({"result": request.get("builtin"),
                          "decision": {"action": "no_finding", "rationale": noise, "evidence": {"note": noise}}}),
              flush=True)
        continue
    sys.stdout.buffer.write(b"not json \\x1b[2J\\xff\\xfe\\n")
    sys.stdout.flush()
    sys.stderr.buffer.write(b"\\x1b]0;pwned\\x07\\xff\\n")
    sys.exit(4)
"""


def small_quickstart(tmp, name, skills_yaml):
    """configs/goals/quickstart.yaml with a tiny budget and the given skills: section."""
    with open(goal_path("quickstart.yaml")) as f:
        text = f.read()
    text = re.sub(r"(?m)^budget:.*$", "budget: {evaluations: 6, wall_time_s: 60}", text)
    text = re.sub(r"(?m)^max_iterations:.*$", "max_iterations: 2", text)
    check("budget: {evaluations: 6" in text and "max_iterations: 2" in text, "quickstart.yaml changed shape")
    return write_goal(tmp, name, text + "\n" + skills_yaml)


def script(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def decisions(run_id, db):
    proc = run(["log", str(run_id), "--json"], db)
    check(proc.returncode == 0, f"autotune log exited {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout)


def by(log, plugin):
    return [d for d in log if d["proposer"] == "plugin:" + plugin]


def check_completed(summary, what):
    check(summary["status"] == "completed", f"{what}: status {summary['status']} ({summary.get('stop_reason')})")
    check(summary["evaluations"] >= 1, f"{what}: nothing measured")


# An analyzer after the built-in that passes its result on, then prints a line nobody asked for.
CHATTY_PLUGIN = """import json, sys
for line in sys.stdin:
    request = json.loads(line).get("request") or {}
    print(json.dumps({"result": request.get("builtin"), "decision": {"action": "no_finding", "rationale": "ok"}}))
    print("chatter", flush=True)
"""


def main():
    example = os.path.join(SOURCE, "examples", "plugins", "sbuf_pressure_analyzer.py")
    check(os.path.exists(example), f"missing {example}")
    with tempdir() as tmp:
        db = os.path.join(tmp, "plugins.db")

        # --- a plugin program that is not there, the goal named from its own folder: the path tried ---
        goal = small_quickstart(tmp, "missing.yaml", """skills:
  - {name: gone, command: [plugins/gone.py], role: profile_analyzer, after: profile_analyzer}
""")
        with open(goal) as f:
            line = 1 + [i for i, text in enumerate(f) if "name: gone" in text][0]
        proc = subprocess.run([BIN, "run", "missing.yaml", "--db", db], capture_output=True, text=True, timeout=60,
                              cwd=tmp)
        tried = os.path.join(os.path.realpath(tmp), "plugins", "gone.py")
        check(proc.returncode == 2 and proc.stderr.strip().splitlines() == [
            f"autotune: error: missing.yaml:{line}: skills[0].command: program 'plugins/gone.py' is not an "
            f"executable file: {tried} (a relative path is taken from the goal file's folder)"],
            f"missing plugin: {proc.stderr!r}")

        # --- the example analyzer, after the built-in one ---
        goal = small_quickstart(tmp, "example.yaml", f"""skills:
  - name: sbuf-pressure
    command: [python3, {json.dumps(example)}]
    role: profile_analyzer
    after: profile_analyzer
    timeout_s: 60
""")
        listed = subprocess.run([BIN, "skills", goal, "--json"], capture_output=True, text=True, timeout=60)
        check(listed.returncode == 0, f"autotune skills exited {listed.returncode}: {listed.stderr}")
        listing = json.loads(listed.stdout)
        check([b["name"] for b in listing["builtin"]] ==
              ["profile_analyzer", "kernel_generator", "param_explorer", "benchmark_runner"],
              f"built-in skills: {listing['builtin']}")
        check(len(listing["plugins"]) == 1 and listing["plugins"][0]["name"] == "sbuf-pressure" and
              listing["plugins"][0]["after"] == "profile_analyzer", f"plugins: {listing['plugins']}")

        summary = run_json(["run", goal], db)
        check_completed(summary, "example plugin run")
        log = decisions(summary["run_id"], db)
        calls = by(log, "sbuf-pressure")
        # `log --skill` takes a plugin's name as well as a skill's.
        proc = run(["log", str(summary["run_id"]), "--skill", "sbuf-pressure", "--json"], db)
        check(proc.returncode == 0, f"log --skill sbuf-pressure: {proc.stderr}")
        only = json.loads(proc.stdout)
        check(only and all(d["proposer"] == "plugin:sbuf-pressure" for d in only), f"log --skill plugin: {only}")
        check(calls, "no decision with proposer sbuf-pressure")
        analyses = [d for d in log if d["skill"] == "profile_analyzer" and d["proposer"] == "rules"]
        check(len(calls) == len(analyses), f"{len(calls)} plugin calls for {len(analyses)} built-in analyses")
        for call in calls:
            check(call["skill"] == "profile_analyzer" and call["action"] == "add_finding",
                  f"plugin decision: {call['skill']} {call['action']} ({call['outcome']})")
            added = call["evidence"].get("findings_added", [])
            check(len(added) == 1 and added[0]["kind"] == "sbuf_pressure", f"findings added: {added}")
            evidence = added[0]["evidence"]
            check(evidence["sbuf_peak_bytes_per_partition"] > 0 and evidence["sbuf_usable_bytes_per_partition"] > 0,
                  f"finding evidence: {evidence}")
            check(call["outcome"].startswith("amended the built-in analysis"), f"outcome: {call['outcome']}")
            # The plugin's record follows the built-in analysis of the same iteration.
            previous = [d for d in log if d["seq"] == call["seq"] - 1][0]
            check(previous["skill"] == "profile_analyzer" and previous["proposer"] == "rules",
                  f"decision before the plugin's: {previous['skill']} {previous['proposer']}")

        # --- plugins that crash, hang, answer garbage or name an unknown variant ---
        script(tmp, "crash.py", CRASH)
        script(tmp, "hang.py", HANG)
        script(tmp, "malformed.py", MALFORMED)
        script(tmp, "unknown_variant.py", UNKNOWN_VARIANT)
        goal = small_quickstart(tmp, "broken.yaml", """skills:
  - {name: crasher, command: [./crash.py], role: profile_analyzer, after: profile_analyzer, max_restarts: 1}
  - {name: sleeper, command: [./hang.py], role: kernel_generator, after: kernel_generator, timeout_s: 0.5,
     max_restarts: 0}
  - {name: garbler, command: [./malformed.py], role: param_explorer, replaces: param_explorer}
  - {name: dreamer, command: [./unknown_variant.py], role: kernel_generator, replaces: kernel_generator}
""")
        proc = run(["run", goal, "--json"], db, timeout=120)
        check(proc.returncode == 0, f"run with broken plugins exited {proc.returncode}: {proc.stderr[-2000:]}")
        summary = json.loads(proc.stdout)
        check_completed(summary, "broken plugins run")
        log = decisions(summary["run_id"], db)

        def failures(name, kind):
            calls = by(log, name)
            check(calls, f"no decision with proposer {name}")
            for call in calls:
                check(call["action"] == "plugin_failed", f"{name}: action {call['action']}")
                check(call["outcome"].endswith("the built-in result is used"), f"{name}: outcome {call['outcome']}")
            check(calls[0]["outcome"].startswith(kind + ":"), f"{name}: first outcome {calls[0]['outcome']}")
            return calls

        # Every failure is on screen when it happens and in the summary, with what to do.
        for name in ("crasher", "sleeper", "garbler", "dreamer"):
            check(f"autotune: warning: plugin '{name}'" in proc.stderr, f"no warning for {name}: {proc.stderr[-1500:]}")
        check(any("crasher" in w and "autotune skills" in w for w in summary["warnings"]),
              f"the summary's warnings lack the crash: {summary['warnings']}")
        # What to do depends on the failure: a reply that never came is a flush or a timeout_s, a reply that is
        # not one the protocol takes is in docs/plugins.md.
        check(any("sleeper" in w and "flush=True" in w and "timeout_s" in w for w in summary["warnings"]),
              f"the timed-out plugin's warning says nothing of flushing or timeout_s: {summary['warnings']}")
        check(any("garbler" in w and "docs/plugins.md" in w and "one line of JSON" in w for w in summary["warnings"]),
              f"the malformed plugin's warning does not point at the protocol: {summary['warnings']}")

        crashed = failures("crasher", "crashed")
        check("exited with code 3" in crashed[0]["outcome"] and "giving up on purpose" in crashed[0]["outcome"],
              f"crash outcome lacks the exit code or stderr: {crashed[0]['outcome']}")
        hung = failures("sleeper", "timed_out")
        check("timed out after 0.5 s" in hung[0]["outcome"], f"hang outcome: {hung[0]['outcome']}")
        for later in hung[1:]:
            check(later["outcome"].startswith("dead:"), f"a hung plugin without restarts is dead: {later['outcome']}")
        garbled = failures("garbler", "malformed")
        check("not JSON" in garbled[0]["outcome"], f"malformed outcome: {garbled[0]['outcome']}")
        dreamed = failures("dreamer", "malformed")
        check("unknown variant 'no_such_variant'" in dreamed[0]["outcome"], f"result check: {dreamed[0]['outcome']}")
        # The built-in skills answered every step.
        for skill in ("profile_analyzer", "kernel_generator", "param_explorer"):
            check(any(d["skill"] == skill and d["proposer"] == "rules" for d in log), f"no built-in {skill} decision")

        # --- a generator that offers a settled idea again: left out, and the built-in's ideas are used ---
        script(tmp, "again.py", AGAIN)
        goal = small_quickstart(tmp, "again.yaml", """skills:
  - {name: again, command: [./again.py], role: kernel_generator, replaces: kernel_generator}
""")
        summary = run_json(["run", goal], db)
        check_completed(summary, "settled-idea plugin run")
        calls = by(decisions(summary["run_id"], db), "again")
        check(calls and calls[0]["action"] == "propose", f"first answer: {calls[:1]}")
        check(len(calls) >= 2 and all(c["action"] == "plugin_failed" and "settled earlier (again)" in c["outcome"]
                                      for c in calls[1:]), f"later answers: {[c['outcome'] for c in calls]}")
        # The first answer settles without a measurement, so its iteration asks once more; after that, once per
        # iteration (it was asked up to nine times in one).
        check(len(calls) <= summary["iterations"] + 1,
              f"{len(calls)} plugin calls in {summary['iterations']} iterations")

        # --- untrusted text: stored, printed escaped, and valid JSON out ---
        script(tmp, "hostile.py", HOSTILE)
        goal = small_quickstart(tmp, "hostile.yaml", """skills:
  - {name: hostile, command: [./hostile.py], role: profile_analyzer, after: profile_analyzer, max_restarts: 1}
""")
        proc = subprocess.run([BIN, "run", goal, "--db", db, "--json"], capture_output=True, timeout=120)
        check(proc.returncode == 0, f"run with a hostile plugin exited {proc.returncode}: {proc.stderr[-2000:]!r}")
        run_id = json.loads(proc.stdout)["run_id"]
        for raw in (b"\x1b", b"\x07", b"\r"):
            check(raw not in proc.stderr, f"a raw control byte {raw!r} reached the terminal: {proc.stderr[-600:]!r}")
        text = subprocess.run([BIN, "log", str(run_id), "--db", db], capture_output=True, timeout=60)
        check(text.returncode == 0, f"log: {text.stderr!r}")
        for raw in (b"\x1b", b"\x07", b"\r"):
            check(raw not in text.stdout, f"log printed a raw control byte {raw!r}")
        check(b"\\x1b]0;pwned\\x07\\x1b[2J\\x0dclear" in text.stdout, "log does not show the rationale escaped")
        hostile = by(decisions(run_id, db), "hostile")  # --json: valid JSON whatever the bytes
        check(hostile and hostile[0]["rationale"] == "\x1b]0;pwned\x07\x1b[2J\rclear",
              f"the stored rationale is not the plugin's text: {hostile[:1]}")
        check(any(d["action"] == "plugin_failed" for d in hostile), f"the crash is not logged: {hostile}")
        # Bytes that are not UTF-8 in a stored decision (a database written by another tool, say): `log --json`
        # still prints valid JSON, with U+FFFD in their place.
        import sqlite3
        con = sqlite3.connect(db)
        con.execute("UPDATE decisions SET outcome = CAST(X'6f6bff20fe' AS TEXT) WHERE run = ? AND seq = 1", (run_id,))
        con.commit()
        con.close()
        first = [d for d in decisions(run_id, db) if d["seq"] == 1][0]
        check(first["outcome"] == "ok\ufffd \ufffd", f"outcome with invalid UTF-8: {first['outcome']!r}")

        # --- misconfiguration: one line naming file, line and key, before anything runs ---
        goal = small_quickstart(tmp, "bad.yaml", """skills:
  - {name: runner, command: [./crash.py], role: benchmark_runner, replaces: benchmark_runner}
""")
        proc = run(["run", goal], db)
        lines = proc.stderr.strip().splitlines()
        check(proc.returncode == 2 and len(lines) == 1, f"bad plugin: exit {proc.returncode}, stderr {proc.stderr!r}")
        check(re.search(r"bad\.yaml:\d+: skills\[0\]\.role: ", lines[0]) and "target: {kind: command" in lines[0],
              f"bad plugin message: {lines[0]}")

        # --- a plugin that prints more than its replies: the warning names the plugin, not its interpreter ---
        goal = quickstart_with_analyzer(tmp, "chatty.yaml", "chatty.py", CHATTY_PLUGIN, "chatty")
        proc = run(["run", goal], os.path.join(tmp, "chatty.db"))
        check(proc.returncode == 0 and "plugin 'chatty' printed output nobody asked for, discarded: chatter" in
              proc.stderr and "'python3' printed" not in proc.stderr, f"chatty plugin: {proc.stderr[-2000:]}")
    print("ok")


if __name__ == "__main__":
    main()
