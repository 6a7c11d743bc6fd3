"""The README's and docs' simulated figures are what fresh runs give: scripts/figures.py --check runs every
command behind a marked figure on fresh databases and compares; and the check does fail on a stale figure,
a stale table and an unknown figure name."""
import os
import shutil
import subprocess
import sys

from loop_support import BIN, SOURCE, check, tempdir

SCRIPT = os.path.join(SOURCE, "scripts", "figures.py")
BUILD = os.path.dirname(os.path.abspath(BIN))


def figures(*args):
    return subprocess.run([sys.executable, SCRIPT, "--build", BUILD, *args], capture_output=True, text=True,
                          timeout=1800)


def check_fails_on_stale_figures():
    with tempdir() as root:
        os.mkdir(os.path.join(root, "docs"))
        readme = open(os.path.join(SOURCE, "README.md")).read()
        check("<!-- figures: tutorial-table -->" in readme, "the README no longer marks the tutorial table")
        # One figure of the tutorial's table changed by a hundredth, one inline figure invented.
        table_start = readme.index("<!-- figures: tutorial-table -->")
        row = readme.index("| `hoisted` |", table_start)
        stale = readme[:row] + readme[row:].replace(" ms |", "1 ms |", 1)
        with open(os.path.join(root, "README.md"), "w") as out:
            out.write(stale)
        with open(os.path.join(root, "docs", "made_up.md"), "w") as out:
            out.write("The ratios are <!--fig:tutorial-ratios-->1.00/1.00/1.00/1.00<!--/fig-->.\n")
        proc = figures("--check", "--root", root, "--only", "calibration")
        check(proc.returncode == 1, f"stale figures pass the check: {proc.stdout}{proc.stderr}")
        check("README.md:" in proc.stdout and "tutorial-table" in proc.stdout and "hoisted" in proc.stdout,
              f"the stale table row is not named: {proc.stdout}")
        check("docs/made_up.md:1: tutorial-ratios: the document says '1.00/1.00/1.00/1.00'" in proc.stdout,
              f"the stale inline figure is not named: {proc.stdout}")

        # --write puts the fresh figures in; the check then passes.
        proc = figures("--write", "--root", root, "--only", "calibration")
        check(proc.returncode == 0, f"--write failed: {proc.stdout}{proc.stderr}")
        proc = figures("--check", "--root", root, "--only", "calibration")
        check(proc.returncode == 0, f"the check fails after --write: {proc.stdout}{proc.stderr}")

        with open(os.path.join(root, "docs", "made_up.md"), "a") as out:
            out.write("And <!--fig:no.such.figure-->1<!--/fig-->.\n")
        proc = figures("--check", "--root", root, "--only", "calibration")
        check(proc.returncode == 1 and "docs/made_up.md:2: no figure is named 'no.such.figure'" in proc.stderr,
              f"an unknown figure name passes: {proc.stdout}{proc.stderr}")


def main():
    check_fails_on_stale_figures()
    proc = figures("--check", "--skip-slow")
    print(proc.stdout, end="")
    check(proc.returncode == 0, f"the documents' figures differ from fresh runs (exit {proc.returncode}):\n"
                                f"{proc.stdout}{proc.stderr[-3000:]}")
    print("ok")


if __name__ == "__main__":
    main()
