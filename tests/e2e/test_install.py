"""`cmake --install` gives a working autotune with its configs: targets, the model files and the example
goals under share/autotune/configs, and the executable runs from the installed files, reading its own
targets (not the source tree's) unless AUTOTUNE_CONFIG_DIR says otherwise."""
import json
import os
import re
import subprocess

from loop_support import BIN, SOURCE, check, tempdir


def main():
    build_dir = os.path.dirname(os.path.abspath(BIN))
    with tempdir() as tmp:
        prefix = os.path.join(tmp, "prefix")
        proc = subprocess.run(["cmake", "--install", build_dir, "--prefix", prefix], capture_output=True,
                              text=True, timeout=300)
        check(proc.returncode == 0, f"cmake --install: {proc.stderr[-1000:]}")
        configs = os.path.join(prefix, "share", "autotune", "configs")
        for path in ("targets/trn1.yaml", "targets/trn2.yaml", "models/qwen3-0.6b.yaml", "goals/quickstart.yaml",
                     "goals/qwen3-0.6b-4layers-16k.yaml"):
            check(os.path.isfile(os.path.join(configs, path)), f"not installed: {path}")
        installed = os.path.join(prefix, "bin", "autotune")
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        env.pop("AUTOTUNE_CONFIG_DIR", None)
        # The installed executable reads its own share/autotune, though the source tree it was built from exists:
        # a target only the install has is listed and usable, and the directory in use is the installed one.
        with open(os.path.join(configs, "targets", "trn2.yaml")) as f:
            text = f.read()
        with open(os.path.join(configs, "targets", "installed-only.yaml"), "w") as f:
            f.write(re.sub(r"(?m)^name: trn2$", "name: installed-only", text))
        proc = subprocess.run([installed, "targets", "--json"], capture_output=True, text=True, timeout=60, env=env,
                              cwd=tmp)
        check(proc.returncode == 0, f"installed targets: {proc.stderr}")
        listing = json.loads(proc.stdout)
        check(os.path.realpath(listing["directory"]) == os.path.realpath(os.path.join(configs, "targets")),
              f"the installed autotune reads targets from {listing['directory']}, not its own {configs}")
        names = [t["name"] for t in listing["targets"]]
        check("installed-only" in names and "trn2" in names, f"installed targets: {names}")
        proc = subprocess.run([installed, "profile", "--kernel", "exp", "--target", "installed-only", "--no-verify"],
                              capture_output=True, text=True, timeout=60, env=env, cwd=tmp)
        check(proc.returncode == 0, f"a target only the install has: {proc.stderr}")
        # AUTOTUNE_CONFIG_DIR still names another configs directory (here the source tree's).
        source_env = dict(env, AUTOTUNE_CONFIG_DIR=os.path.join(SOURCE, "configs"))
        proc = subprocess.run([installed, "targets", "--json"], capture_output=True, text=True, timeout=60,
                              env=source_env, cwd=tmp)
        names = [t["name"] for t in json.loads(proc.stdout)["targets"]]
        check("installed-only" not in names and "trn2" in names, f"AUTOTUNE_CONFIG_DIR not followed: {names}")
        proc = subprocess.run([installed, "model", os.path.join(configs, "models", "qwen3-0.6b.yaml"), "--layers",
                               "1", "--seq", "128", "--no-verify", "--db", os.path.join(tmp, "none.db")],
                              capture_output=True, text=True, timeout=300, env=env, cwd=tmp)
        check(proc.returncode == 0 and "forward" in proc.stdout, f"installed model: {proc.stderr[-1000:]}")
    print("ok")


if __name__ == "__main__":
    main()
