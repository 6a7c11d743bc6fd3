"""A kernel's shape is given whole or not at all, for every family and every command.

Given in part (`--shape M=1024,N=1024`, `shape: {M: 256, N: 512}`) it is one line naming what is
missing and the family's shape arguments, exit 2, before anything runs; never completed from the
default. Not given, the family's default applies and the output says so. `run` and `sweep` print
the resolved shape (and put it in their JSON); `profile` prints it on its first report line.
"""
import json
import os
import subprocess

from loop_support import BIN, SOURCE, check, one_error_line, run, tempdir, write_goal


def families():
    proc = subprocess.run([BIN, "kernels", "--json"], capture_output=True, text=True, timeout=60)
    return {k["name"]: k for k in json.loads(proc.stdout)["kernels"]}


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        for name, family in sorted(families().items()):
            args, default = family["shape_args"], family["default_shape"]
            if len(args) > 1:
                # A goal with every argument but the last, for run and sweep alike.
                partial = ", ".join(f"{a}: {default[a]}" for a in args[:-1])
                goal = write_goal(tmp, f"{name}_partial.yaml",
                                  f"name: partial\nkernel:\n  family: {name}\n  shape: {{{partial}}}\n")
                for command in ("run", "sweep"):
                    proc = run([command, goal], db)
                    one_error_line(proc, f"{name}_partial.yaml:4: kernel.shape: missing {args[-1]}; "
                                         f"the shape arguments of {name} are {', '.join(args)}")
                    check(proc.stdout == "", f"{command} {name}: stdout {proc.stdout!r}")
                # The same on the command line.
                given = ",".join(f"{a}={default[a]}" for a in args[1:])
                proc = subprocess.run([BIN, "profile", "--kernel", name, "--shape", given], capture_output=True,
                                      text=True, timeout=60)
                one_error_line(proc, f"is missing {args[0]}; the shape arguments of {name} are {', '.join(args)}")
        check(not os.path.exists(db), "a goal with a partial shape opened the database")

        # No shape at all: the family's default, and the summaries say so.
        goal = write_goal(tmp, "default.yaml", "name: default\nkernel: {family: exp}\nmax_iterations: 1\n"
                                               "budget: {evaluations: 2}\n")
        proc = run(["run", goal], db)
        check(proc.returncode == 0, f"run: exit {proc.returncode}: {proc.stderr[-500:]}")
        check("  kernel:      exp, shape rows=250,cols=512 (the kernel's default: the goal gives no kernel.shape), "
              "fp32\n" in proc.stdout, f"run does not say the shape is the default:\n{proc.stdout}")
        proc = run(["run", goal, "--json"], db)
        summary = json.loads(proc.stdout)
        check(summary["kernel"] == {"name": "exp", "shape": {"rows": 250, "cols": 512}, "shape_source": "default",
                                    "dtype": "fp32"}, f"run --json kernel: {summary.get('kernel')}")
        proc = run(["sweep", goal, "--limit", "2"], db)
        check("kernel: exp, shape rows=250,cols=512 (the kernel's default" in proc.stdout,
              f"sweep does not say the shape is the default:\n{proc.stdout}")
        # Given whole: printed as given.
        goal = write_goal(tmp, "given.yaml", "name: given\nkernel: {family: exp, shape: {cols: 1024, rows: 128}}\n"
                                             "max_iterations: 1\nbudget: {evaluations: 2}\n")
        proc = run(["run", goal], db)
        check("  kernel:      exp, shape rows=128,cols=1024, fp32\n" in proc.stdout, f"run:\n{proc.stdout}")
        # A target that brings its own space has no shape to print.
        proc = run(["run", os.path.join(SOURCE, "configs", "goals", "replay-convolution.yaml"), "--json"], db)
        check(json.loads(proc.stdout)["kernel"] is None, "a replayed space printed a kernel shape")
    print("ok")


if __name__ == "__main__":
    main()
