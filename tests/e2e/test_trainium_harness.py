"""The device harness (examples/trainium/nki_device_bench.py) against a stand-in for the Neuron SDK.

tests/support/fake_neuron_sdk stands in for `nki` (the kernel executes with the numpy stand-in of the NKI
modules and leaves a NEFF) and for `nrtpy` (a controlled device time). The harness must export the candidate,
run it, check its output against its float64 reference, time it in device mode with warm-up and batches, and
print the metrics JSON; a wrong output must fail the candidate with one line; without the SDK it must say so
in one line and exit non-zero. Nothing here measures a device."""
import json
import os
import subprocess
import sys

if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
    try:
        import numpy  # noqa: F401
    except ImportError:  # the harness needs numpy: Debian's python3 has it (scripts/setup.sh --all)
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])

from loop_support import BIN, SOURCE, check, query, run, tempdir, write_goal

HARNESS = os.path.join(SOURCE, "examples", "trainium", "nki_device_bench.py")
FAKE_SDK = os.path.join(SOURCE, "tests", "support", "fake_neuron_sdk")
STANDIN = os.path.join(SOURCE, "tests", "support", "nki_standin")
ARGS = ["--kernel", "attention", "--variant", "flash", "--dtype", "fp32", "--target", "trn2",
        "--shape", "seq=700,q_heads=4,kv_heads=2,head_dim=64"]


def harness(tmp, cache, params, sdk=True, extra=None, args=()):
    env = dict(os.environ, AUTOTUNE_BIN=os.path.abspath(BIN), AUTOTUNE_PARAMS=json.dumps(params),
               PYTHONPATH=os.pathsep.join([FAKE_SDK, STANDIN]) if sdk else "")
    env.update(extra or {})
    return subprocess.run([sys.executable, HARNESS, *ARGS, "--cache", cache, *args], capture_output=True,
                          text=True, cwd=tmp, env=env, timeout=300)


def stderr_lines(proc):
    return [line for line in proc.stderr.splitlines() if line.strip()]


def main():
    with tempdir() as tmp:
        params = {"kv_tile": 256, "q_tile": 64, "unroll_factor": 2}

        # Without the SDK: one line naming what is missing, exit 3.
        proc = harness(tmp, os.path.join(tmp, "c0"), params, sdk=False)
        check(proc.returncode == 3, f"without the SDK the harness exited {proc.returncode}: {proc.stderr}")
        lines = stderr_lines(proc)
        check(len(lines) == 1 and "the Neuron SDK is not installed" in lines[0] and "cannot import nki" in lines[0],
              f"without the SDK stderr reads {lines}")

        # nki without nrtpy: the same kind of line, before the kernel is compiled.
        write_goal(tmp, "nrtpy.py", "raise ImportError('no nrtpy in this environment')\n")
        proc = harness(tmp, os.path.join(tmp, "c0"), params,
                       extra={"PYTHONPATH": os.pathsep.join([tmp, FAKE_SDK, STANDIN])})
        lines = stderr_lines(proc)
        compiled = [f for _, _, files in os.walk(os.path.join(tmp, "c0")) for f in files if f.endswith(".neff")]
        check(proc.returncode == 3 and len(lines) == 1 and "cannot import nrtpy" in lines[0] and not compiled,
              f"without nrtpy: exit {proc.returncode}, stderr {lines}, compiled {compiled}")

        # A correct candidate: checked against the reference, timed in device mode, one JSON line.
        log = os.path.join(tmp, "benchmark.log")
        fake = {"FAKE_NRTPY_DEVICE_MS": "0.4", "FAKE_NRTPY_LOG": log}
        proc = harness(tmp, os.path.join(tmp, "c1"), params, extra=fake, args=["--warmup", "7", "--batches", "3"])
        check(proc.returncode == 0, f"the harness exited {proc.returncode}: {proc.stderr}")
        metrics = json.loads(proc.stdout.strip().splitlines()[-1])
        check(abs(metrics["latency_s"] - 0.4e-3) < 1e-12, f"latency {metrics['latency_s']}, the device said 0.4 ms")
        check(metrics["max_rel_error"] < 1e-4 and metrics["cosine"] > 0.99999, f"the check: {metrics}")
        check(metrics["batches"] == 3 and metrics["iterations"] == 100 and metrics["warmup"] == 7, f"{metrics}")
        calls = [json.loads(line) for line in open(log)]
        check(len(calls) == 3 and all(c["mode"] == "device" and c["benchmark_iter"] == 100 for c in calls)
              and calls[0]["warmup_iter"] == 7 and calls[0]["inputs"] == ["k_t", "q_t", "v"],
              f"benchmark calls {calls}")

        # The same candidate again (a repeat): the compiled kernel is reused, only timed.
        proc = harness(tmp, os.path.join(tmp, "c1"), params, extra=dict(fake, FAKE_NKI_WRONG="1"))
        check(proc.returncode == 0, f"a repeat compiled again: {proc.stderr}")

        # A wrong output: the candidate fails with one line.
        proc = harness(tmp, os.path.join(tmp, "c2"), params, extra={"FAKE_NKI_WRONG": "1"})
        lines = stderr_lines(proc)
        check(proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("nki_device_bench: wrong answer: "
                                                                             "max relative error"),
              f"a wrong output: exit {proc.returncode}, stderr {lines}")

        # An unknown parameter is the export's one line.
        proc = harness(tmp, os.path.join(tmp, "c3"), {"kv_tyle": 256})
        check(proc.returncode == 2 and "unknown parameter 'kv_tyle'" in proc.stderr, proc.stderr)

        # A wrong interpreter or check option is one line before anything is exported or compiled; a goal's argv
        # passes no shell, so the harness expands the ~ of an interpreter's path itself.
        for bad, says in ((["--nrtpy-python", os.path.join(tmp, "no-venv", "python")], "--nrtpy-python '"),
                          (["--nki-python", "~/no-venv/python"], "--nki-python '~/no-venv/python'"),
                          (["--check-rows", "0"], "--check-rows 1 or more"),
                          (["--tolerance", "0"], "--tolerance 0: accepted:")):
            cache = os.path.join(tmp, "c-bad")
            proc = harness(tmp, cache, params, extra=fake, args=bad)
            lines = stderr_lines(proc)
            check(proc.returncode == 2 and len(lines) == 1 and says in lines[0] and not os.path.exists(cache),
                  f"{bad}: exit {proc.returncode}, stderr {lines}, cache kept: {os.path.exists(cache)}")
        os.makedirs(os.path.join(tmp, "home", "venv", "bin"))
        os.symlink(sys.executable, os.path.join(tmp, "home", "venv", "bin", "python"))
        proc = harness(tmp, os.path.join(tmp, "c1"), params, extra=dict(fake, HOME=os.path.join(tmp, "home")),
                       args=["--nki-python", "~/venv/bin/python", "--nrtpy-python", "~/venv/bin/python"])
        check(proc.returncode == 0, f"interpreters under ~: exit {proc.returncode}, {stderr_lines(proc)}")

        # Through the loop: the command target runs the harness; a device that computes wrongly fails the trial.
        goal = write_goal(tmp, "device.yaml", f"""
name: on-fake-device
kernel: {{family: attention}}
target:
  kind: command
  argv: {json.dumps([sys.executable, HARNESS, *ARGS, "--cache", os.path.join(tmp, "c4")])}
  repeats: 3
search:
  strategy: grid
  space: {{kv_tile: [256, 512], q_tile: [64]}}
start: {{params: {{kv_tile: 256, q_tile: 64}}}}
max_iterations: 1
budget: {{evaluations: 2}}
""")
        env = {"PYTHONPATH": os.pathsep.join([FAKE_SDK, STANDIN]), "AUTOTUNE_BIN": os.path.abspath(BIN),
               "FAKE_NRTPY_DEVICE_MS": "0.3"}
        db = os.path.join(tmp, "device.db")
        proc = run(["run", goal], db, env_extra=env)
        check(proc.returncode == 0, f"the run exited {proc.returncode}: {proc.stderr[-1500:]}")
        rows = query(db, "SELECT status, metrics, repeats FROM trials ORDER BY id")
        check(len(rows) == 2 and all(r[0] == "ok" for r in rows), f"trials {rows}")
        first = json.loads(rows[0][1])
        check(abs(first["latency_s"] - 0.3e-3) < 1e-12 and len(json.loads(rows[0][2])) == 3
              and first["intervals"]["latency_s"]["n"] == 3, f"trial metrics {first}")
        # Its trials are the harness's parameters, not a family variant to rebuild: export says where the kernel is.
        proc = run(["export", "1", "--nki", "-o", os.path.join(tmp, "best.py")], db)
        lines = stderr_lines(proc)
        check(proc.returncode != 0 and len(lines) == 1 and "measured a command target's program" in lines[0]
              and "metric 'kernel'" in lines[0] and not os.path.exists(os.path.join(tmp, "best.py")),
              f"export of a device trial: exit {proc.returncode}, stderr {lines}")

        wrong_db = os.path.join(tmp, "wrong.db")
        goal = write_goal(tmp, "wrong.yaml", open(goal).read().replace(os.path.join(tmp, "c4"), os.path.join(tmp, "c5")))
        proc = run(["run", goal], wrong_db, env_extra=dict(env, FAKE_NKI_WRONG="1"))
        status, error = query(wrong_db, "SELECT status, error FROM trials ORDER BY id")[0]
        check(proc.returncode != 0 and status == "failed" and "wrong answer: max relative error" in error,
              f"a wrong output through the loop: exit {proc.returncode}, trial {status}: {error}")
        # The shipped goal reads, and without the SDK (or numpy) it stops at its baseline with the harness's line.
        # (a copy in the temporary folder, so that the harness's cache stays out of the source tree)
        text = open(os.path.join(SOURCE, "configs", "goals", "attention-on-device.yaml")).read()
        check("../../examples/trainium/nki_device_bench.py" in text, "the shipped goal names another program")
        copy = write_goal(tmp, "attention-on-device.yaml", text.replace("../../examples/trainium/nki_device_bench.py",
                                                                        HARNESS))
        shipped = os.path.join(tmp, "shipped.db")
        proc = run(["run", copy], shipped,
                   env_extra={"PYTHONPATH": "", "AUTOTUNE_BIN": os.path.abspath(BIN)})
        status, error = query(shipped, "SELECT status, error FROM trials ORDER BY id")[0]
        check(proc.returncode != 0 and status == "failed" and "exited with code 3" in error
              and "nki_device_bench: " in error, f"the shipped goal without the SDK: {status}: {error}")
        # docs/trainium.md's screen, added to the shipped goal, is a goal autotune accepts.
        doc = open(os.path.join(SOURCE, "docs", "trainium.md")).read()
        screen = doc[doc.index("```yaml\nscreen:") + len("```yaml\n"):]
        screen = screen[:screen.index("```")]
        screened = write_goal(tmp, "attention-on-device-screened.yaml", open(copy).read() + screen)
        proc = run(["run", screened], os.path.join(tmp, "screened.db"),
                   env_extra={"PYTHONPATH": "", "AUTOTUNE_BIN": os.path.abspath(BIN)})
        status, error = query(os.path.join(tmp, "screened.db"), "SELECT status, error FROM trials ORDER BY id")[0]
        check(status == "failed" and "exited with code 3" in error, f"the documented screen: {proc.stderr[-800:]}")
    print("ok")


if __name__ == "__main__":
    main()
