"""`cmake --install` gives a working autotune with its configs: targets, the model files and the example
goals under share/autotune/configs, and the executable runs from the installed files."""
import os
import subprocess

from loop_support import BIN, check, tempdir


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
        env["AUTOTUNE_CONFIG_DIR"] = configs  # the installed targets, whatever the build knows
        proc = subprocess.run([installed, "targets"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp)
        check(proc.returncode == 0 and "trn2" in proc.stdout, f"installed targets: {proc.stderr}")
        proc = subprocess.run([installed, "model", os.path.join(configs, "models", "qwen3-0.6b.yaml"), "--layers",
                               "1", "--seq", "128", "--no-verify", "--db", os.path.join(tmp, "none.db")],
                              capture_output=True, text=True, timeout=300, env=env, cwd=tmp)
        check(proc.returncode == 0 and "forward" in proc.stdout, f"installed model: {proc.stderr[-1000:]}")
    print("ok")


if __name__ == "__main__":
    main()
