#!/usr/bin/env python3
"""Builds the folder of recorded tuning spaces that bench/spaces/splits.json names, and checks it.

    bench/spaces/gather.py OUT_DIR [--repo OWNER/NAME=GIT_DIR ...] [--split NAME ...] [--write-checksums]

Every space in bench/spaces/splits.json says where it comes from: a file at a commit of a public git
repository (`repo`, `commit`, `path`), or a file committed here under bench/spaces/ (`file`, the
simulator's spaces). Each is read (a repository from GIT_DIR when given, else cloned once from GitHub
into OUT_DIR/.git-cache), decompressed when it ends in .gz, converted to a Kernel Tuner cachefile when
it is in another format (`convert`), and written to OUT_DIR/<name>.json. Its SHA-256 must be the one
recorded in the split file: a source that changed, or a conversion that did, is one clear error, not a
silently different benchmark. Spaces already in OUT_DIR with the right checksum are kept.

Conversions:
- `ktt`: a KTT output file ({"Metadata", "Results"}): the configuration's parameters in their order,
  time = the kernel's Duration in ms (KTT records microseconds), a failed computation a
  "RuntimeFailedConfig" as Kernel Tuner records it.
- `records`: the list of results that Kernel Tuner's `tune_kernel` returns, saved as JSON (one object per
  configuration: its parameters, "time" in ms, and other measurements). The space's `parameters` name
  the configuration's keys in order; `device` and `kernel` name what was measured. Every configuration
  must be there once, with a time: a number, or the name of a failure ("RuntimeFailedConfig").
- `negate:FIELD`: a Kernel Tuner cachefile whose objective FIELD is to be maximised (the hyperparameter
  tuning spaces' "score"): objective "negated_FIELD" = -FIELD, so that lower is better as
  `autotune search-bench` minimises.
- `failed_at: VALUE` (with or without a conversion): a time of at least VALUE is a failed configuration,
  recorded as "RuntimeFailedConfig" (Kernel Tuner once recorded a configuration that failed to launch
  as a time of 1e20 ms).
"""
import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    sys.exit(f"gather: {message}")


def git_blob(git_dir, commit, path):
    result = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], capture_output=True)
    if result.returncode != 0:
        fail(f"{git_dir}: cannot read {commit}:{path}: {result.stderr.decode().strip()}")
    return result.stdout


def git_dir_of(repo, given, out):
    if repo in given:
        path = given[repo]
        return os.path.join(path, ".git") if os.path.isdir(os.path.join(path, ".git")) else path
    cache = os.path.join(out, ".git-cache", repo.replace("/", "+"))
    if not os.path.isdir(cache):
        print(f"cloning https://github.com/{repo} into {cache}", file=sys.stderr)
        result = subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{repo}", cache])
        if result.returncode != 0:
            fail(f"cannot clone {repo}; give a local copy with --repo {repo}=GIT_DIR")
    return cache


def convert_ktt(data):
    results = data["Results"]
    names = [p["Name"] for p in results[0]["Configuration"]]
    values = {n: [] for n in names}
    cache = {}
    for result in results:
        config = {p["Name"]: p["Value"] for p in result["Configuration"]}
        if list(config) != names:
            fail("KTT results with different parameter lists")
        for n in names:
            if config[n] not in values[n]:
                values[n].append(config[n])
        record = dict(config)
        if result["Status"] == "Ok":
            durations = [c["Duration"] / 1000.0 for c in result["ComputationResults"]]
            record["time"] = sum(durations)
            record["times"] = [sum(durations)]
        else:
            record["time"] = "RuntimeFailedConfig"
        cache[",".join(str(config[n]) for n in names)] = record
    metadata = data["Metadata"]
    return {
        "device_name": metadata.get("Device", ""),
        "kernel_name": results[0].get("KernelName", ""),
        "problem_size": [],
        "source": f"KTT {metadata.get('KttVersion', '')} output, converted by bench/spaces/gather.py",
        "tune_params_keys": names,
        "tune_params": {n: sorted(values[n]) for n in names},
        "objective": "time",
        "cache": cache,
    }


def convert_records(data, space):
    names = space.get("parameters")
    if not names:
        fail(f"{space['name']}: conversion 'records' needs the space's `parameters`")
    cache = {}
    for result in data:
        if any(n not in result for n in names) or not isinstance(result.get("time"), (int, float, str)):
            shown = {n: result.get(n) for n in names} | {"time": result.get("time")}
            fail(f"{space['name']}: a record without {', '.join(names)} or a time: {shown}")
        key = ",".join(str(result[n]) for n in names)
        if key in cache:
            fail(f"{space['name']}: configuration {key} recorded twice")
        cache[key] = {n: result[n] for n in names} | {"time": result["time"], "times": result.get("times", [])}
    return {
        "device_name": space.get("device", ""),
        "kernel_name": space.get("kernel", ""),
        "problem_size": [],
        "source": "Kernel Tuner results, converted by bench/spaces/gather.py",
        "tune_params_keys": names,
        "tune_params": {n: sorted({record[n] for record in cache.values()}) for n in names},
        "objective": "time",
        "cache": cache,
    }


def convert_negate(data, field):
    out = dict(data)
    name = f"negated_{field}"
    cache = {}
    for key, record in data["cache"].items():
        value = record.get(field)
        record = dict(record)
        record[name] = -value if isinstance(value, (int, float)) else value
        cache[key] = record
    out["cache"] = cache
    out["objective"] = name
    return out


def build(space, given, out):
    if "file" in space:
        with open(os.path.join(HERE, space["file"]), "rb") as f:
            raw = f.read()
    else:
        raw = git_blob(git_dir_of(space["repo"], given, out), space["commit"], space["path"])
    if space.get("file", space.get("path", "")).endswith(".gz"):
        raw = gzip.decompress(raw)
    convert = space.get("convert")
    if convert is None and "failed_at" not in space:
        return raw
    data = json.loads(raw)
    if convert == "ktt":
        data = convert_ktt(data)
    elif convert == "records":
        data = convert_records(data, space)
    elif convert is None:
        pass
    elif convert.startswith("negate:"):
        data = convert_negate(data, convert.split(":", 1)[1])
    else:
        fail(f"{space['name']}: unknown conversion '{convert}' (accepted: ktt, records, negate:FIELD)")
    if "failed_at" in space:
        for record in data["cache"].values():
            if isinstance(record.get("time"), (int, float)) and record["time"] >= space["failed_at"]:
                record["time"] = "RuntimeFailedConfig"
    return (json.dumps(data, indent=1) + "\n").encode()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--splits", default=os.path.join(HERE, "splits.json"))
    parser.add_argument("--repo", action="append", default=[], help="OWNER/NAME=GIT_DIR: read it from here")
    parser.add_argument("--split", action="append", help="only these splits (default: all)")
    parser.add_argument("--write-checksums", action="store_true",
                        help="record the checksums of what was built in the split file (after a deliberate change)")
    args = parser.parse_args()
    given = {}
    for item in args.repo:
        if "=" not in item:
            fail(f"--repo {item}: expected OWNER/NAME=GIT_DIR")
        repo, path = item.split("=", 1)
        given[repo] = path
    with open(args.splits) as f:
        splits = json.load(f)
    unknown = set(args.split or []) - set(splits["splits"])
    if unknown:
        fail(f"unknown split {', '.join(sorted(unknown))} (accepted: {', '.join(splits['splits'])})")
    changed = False
    for split, spaces in splits["splits"].items():
        if args.split and split not in args.split:
            continue
        for space in spaces:
            path = os.path.join(args.out, space["name"] + ".json")
            if not args.write_checksums and os.path.exists(path):
                with open(path, "rb") as f:
                    if sha256(f.read()) == space.get("sha256"):
                        continue
            data = build(space, given, args.out)
            digest = sha256(data)
            if args.write_checksums:
                changed |= space.get("sha256") != digest
                space["sha256"] = digest
            elif digest != space.get("sha256"):
                fail(f"{space['name']}: SHA-256 {digest} of what was built, the split file records "
                     f"{space.get('sha256')} (a changed source or conversion; --write-checksums if deliberate)")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            print(f"{split}: {space['name']}", file=sys.stderr)
    if args.write_checksums and changed:
        with open(args.splits, "w") as f:
            json.dump(splits, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
