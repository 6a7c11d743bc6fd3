"""A resume whose replay parts from the stored decisions (here a plugin that answers otherwise than it
did) names the first decision that differs and leaves the run interrupted, to be resumed again."""
import os
import signal
import subprocess
import time

from loop_support import BIN, check, query, quickstart_with_analyzer, tempdir

# Answers with the action its mode file names; on its second request in mode "hang" it says so
# in a marker file and hangs, so that the run can be interrupted there.
PLUGIN = r"""
import json, sys, time
mode_file, marker = sys.argv[1], sys.argv[2]
for number, line in enumerate(sys.stdin, 1):
    action = open(mode_file).read().strip()
    if action == "hang" and number == 2:
        open(marker, "w").close()
        time.sleep(600)
    print(json.dumps({"result": {}, "decision": {"action": action, "rationale": "as the mode file says"}}),
          flush=True)
"""


def main():
    with tempdir() as tmp:
        mode, marker = os.path.join(tmp, "mode"), os.path.join(tmp, "hung")
        goal = quickstart_with_analyzer(tmp, "goal.yaml", "plugin.py", PLUGIN, "moody", mode, marker)
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        db = os.path.join(tmp, "runs.db")
        with open(mode, "w") as f:
            f.write("hang")
        proc = subprocess.Popen([BIN, "run", goal, "--db", db], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.time() + 120
        while time.time() < deadline and not os.path.exists(marker):
            if proc.poll() is not None:
                check(False, f"the run ended before the plugin hung: {proc.stderr.read()[-800:]}")
            time.sleep(0.05)
        check(os.path.exists(marker), "the plugin never received its second request")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        check(query(db, "SELECT status FROM runs WHERE id = 1")[0][0] == "interrupted",
              "the interrupted run is not recorded as interrupted")
        decisions = query(db, "SELECT COUNT(*) FROM decisions WHERE run = 1")[0][0]

        with open(mode, "w") as f:
            f.write("changed")
        resumed = subprocess.run([BIN, "run", goal, "--db", db, "--resume", "1"], capture_output=True,
                                 text=True, timeout=300, env=env)
        check(resumed.returncode == 2, f"the diverged resume exited {resumed.returncode}: {resumed.stderr[-800:]}")
        check("was 'profile_analyzer: hang' but the replay made 'profile_analyzer: changed'" in resumed.stderr,
              f"the error does not name the decision that differs: {resumed.stderr[-800:]}")
        check(query(db, "SELECT status FROM runs WHERE id = 1")[0][0] == "interrupted",
              "the diverged resume left the run other than interrupted")
        check(query(db, "SELECT COUNT(*) FROM decisions WHERE run = 1")[0][0] == decisions,
              "the diverged resume added decisions to the run's log")
    print("ok")


if __name__ == "__main__":
    main()
