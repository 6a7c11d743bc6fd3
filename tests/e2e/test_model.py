"""autotune model and model goals on a short Qwen3-0.6B: the per-operator table, the end-to-end check,
configurations picked up from tuned runs, the model goal's choices, and bad model inputs."""
import json
import os
import re

from loop_support import SOURCE, check, query, run, run_json, tempdir, write_goal

MODEL = os.path.join(SOURCE, "configs", "models", "qwen3-0.6b.yaml")
LLAMA = os.path.join(SOURCE, "configs", "models", "llama-3.2-1b.yaml")
SHORT = ["--layers", "1", "--seq", "384", "--target", "trn2"]


def operators(result):
    return {op["name"]: op for op in result["operators"]}


def check_forward(result, layers, count=24):
    ops = operators(result)
    check(len(ops) == count, f"{count} operators expected, got {sorted(ops)}")
    for name, op in ops.items():
        check(op["status"] == "ok" and op["verified"], f"{name}: {op['status']} {op['error']}")
        check(op["calls"] == (1 if name == "final_norm" else layers), f"{name}: {op['calls']} calls")
    total = sum(op["total_s"] for op in ops.values())
    forward = result["forward"]
    check(abs(total - forward["latency_s"]) <= 1e-9 + 1e-6 * total, f"forward {forward} is not the operators' sum")
    check(forward["latency_s"] >= forward["roofline_bound_s"] > 0, f"forward below its roofline: {forward}")
    check(abs(sum(op["share_percent"] for op in ops.values()) - 100) < 0.01, "shares do not add up to 100%")
    check(result["end_to_end"]["passed"] and result["end_to_end"]["cosine_similarity"] >= 0.999,
          f"end-to-end check: {result['end_to_end']}")


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "model.db")
        baseline = run_json(["model", MODEL] + SHORT + ["--baseline"], db)
        check_forward(baseline, 1)
        check(all(op["configuration"]["source"] == "baseline" for op in baseline["operators"]),
              "--baseline must run every family's baseline")
        defaults = run_json(["model", MODEL] + SHORT, db)
        check_forward(defaults, 1)
        check(operators(defaults)["attention"]["configuration"]["source"] == "default", "no database: defaults")

        # A tuned attention at the model's exact shape is picked up by the next `autotune model`.
        goal = write_goal(tmp, "attention.yaml", """
name: attention-384
kernel: {family: attention, shape: {seq: 384, q_heads: 16, kv_heads: 8, head_dim: 128}, dtype: bf16}
target: trn2
goal: {improvement: 0.9}
max_iterations: 2
budget: {evaluations: 6}
start: {variant: naive}
parallel: 2
seed: 1
""")
        tuned_run = run_json(["run", goal], db)
        after = run_json(["model", MODEL] + SHORT, db)
        attention = operators(after)["attention"]
        check(attention["configuration"]["source"] == "tuned" and attention["configuration"]["run"] == tuned_run["run_id"],
              f"attention should come from run {tuned_run['run_id']}: {attention['configuration']}")
        best = tuned_run["best"]
        check(attention["configuration"]["variant"] == best["variant"], f"{attention['configuration']} vs {best}")
        check_forward(after, 1)

        # The model goal: baseline forward, choices by share x headroom, kernel loops, the tuned forward.
        model_goal = write_goal(tmp, "model-goal.yaml", f"""
name: tiny-model
model: {{file: {MODEL}, layers: 1, seq: 384}}
target: trn2
goal: {{improvement: 0.9}}
max_iterations: 3
per_kernel: {{iterations: 2, evaluations: 4}}
budget: {{evaluations: 12, wall_time_s: 300}}
search: {{transfer: true}}
parallel: 2
seed: 1
""")
        proc = run(["run", model_goal, "--json"], db)
        check(proc.returncode == 0, f"model goal exited {proc.returncode}: {proc.stderr[-2000:]}")
        summary = json.loads(proc.stdout)
        check(summary["status"] == "completed", f"model goal: {summary}")
        # The progress line counts the evaluations of the kernel loop in progress, not only finished loops.
        first_loop = [int(m.group(1)) for m in re.finditer(r"iteration 1/\d+  evaluations (\d+)/\d+ .*\[tune [^\]]*: ",
                                                           proc.stderr)]
        check(first_loop and max(first_loop) > 0, f"the first kernel loop's progress: {first_loop}\n{proc.stderr}")
        check(0 < summary["evaluations"] <= 12, f"budget of 12: {summary['evaluations']}")
        check(summary["best_latency_s"] < summary["baseline_latency_s"], f"no gain: {summary}")
        check(summary["end_to_end"]["passed"], f"end to end: {summary['end_to_end']}")
        decisions = query(db, "SELECT action, evidence, rationale FROM decisions WHERE run = ? AND skill = ?",
                          (summary["run_id"], "model_orchestrator"))
        actions = [d[0] for d in decisions]
        check(actions[0] == "baseline" and actions[-1] == "finish", f"actions: {actions}")
        choices = [d for d in decisions if d[0].startswith("choose:")]
        check(len(choices) == len(summary["kernel_runs"]) >= 1, f"{len(choices)} choices, runs {summary['kernel_runs']}")
        first = json.loads(choices[0][1])
        worths = [c["worth_percent"] for c in first["candidates"] if not c["skipped"]]
        check(worths == sorted(worths, reverse=True), f"candidates not ranked by worth: {worths}")
        check(first["candidates"][0]["operators"].split(",")[0] == choices[0][0].split(":")[1],
              f"the choice is not the worthiest kernel: {choices[0][0]} vs {first['candidates'][0]}")
        check("of the forward" in choices[0][2], f"rationale: {choices[0][2]}")
        # The words say what the numbers are: the time over the bound as a factor, the headroom as a share of the
        # kernel's time (1 - bound / latency), not as a distance above the bound.
        chosen = next(c for c in first["candidates"] if not c["skipped"])
        words = re.search(r"is (\d+)% of the forward and takes ([\d.]+)x its roofline bound \((\d+)% of its time is "
                          r"above the bound\)", choices[0][2])
        check(words, f"rationale: {choices[0][2]}")
        check(abs(float(words.group(2)) - chosen["latency_over_bound"]) <= 0.05 and
              abs(int(words.group(3)) - chosen["headroom_percent"]) <= 0.5 and
              abs(1 - 1 / chosen["latency_over_bound"] - chosen["headroom_percent"] / 100) < 0.001,
              f"rationale {choices[0][2]} against {chosen}")
        for kernel_run in summary["kernel_runs"]:
            rows = query(db, "SELECT status, goal_yaml FROM runs WHERE id = ?", (kernel_run,))
            check(rows and rows[0][0] == "completed", f"kernel run {kernel_run}: {rows}")
            # search.transfer reaches every kernel run: each learns from the earlier runs of its kernel.
            check("transfer: true" in rows[0][1], f"kernel run {kernel_run} does not learn from earlier runs")

        # Llama-3.2-1B (no q/k norm): its gate and up projections (M=8192, K=2048) overflow SBUF with the
        # GEMM's default blocks; the model shrinks the default to the fastest configuration that fits.
        llama = run_json(["model", LLAMA, "--layers", "1", "--seq", "128", "--target", "trn2"],
                         os.path.join(tmp, "fresh.db"))
        check_forward(llama, 1, count=22)
        ops = operators(llama)
        default_gemm = ops["q_proj"]["configuration"]
        check(default_gemm["source"] == "default", f"q_proj: {default_gemm}")
        for name in ("gate_proj", "up_proj"):
            config = ops[name]["configuration"]
            check(config["source"] == "default, shrunk to fit" and config["variant"] == default_gemm["variant"],
                  f"{name}: {config}")
            check("does not fit" in config["note"], f"{name}: {config['note']}")
            smaller = [k for k, v in config["params"].items() if v < default_gemm["params"][k]]
            larger = [k for k, v in config["params"].items() if v > default_gemm["params"][k]]
            check(smaller and not larger, f"{name}: {config['params']} against {default_gemm['params']}")
        text = run(["model", LLAMA, "--layers", "1", "--seq", "128", "--no-verify"], os.path.join(tmp, "fresh.db"))
        check(text.returncode == 0 and "gate_proj, up_proj: the default does not fit" in text.stdout,
              f"the note: {text.stdout}")

        # The model run is not empty: `runs` counts its kernel runs' evaluations and shows the forward before
        # and after; its report has a row per operator and its kernel runs instead of trial charts.
        listed = json.loads(run(["runs", "--json"], db).stdout)
        row = next(r for r in listed if r["id"] == summary["run_id"])
        check(row["evaluations"] == summary["evaluations"] > 0, f"runs: {row} against {summary['evaluations']}")
        check(row["kernel_runs"] == summary["kernel_runs"], f"runs: {row}")
        check(row["best_latency_s"] == summary["best_latency_s"] and row["baseline_latency_s"] == summary["baseline_latency_s"],
              f"runs: {row}")
        line = next(l for l in run(["runs"], db).stdout.splitlines() if l.split()[0] == str(summary["run_id"]))
        check("kernel run" in line and line.rstrip().endswith(str(summary["evaluations"])), f"runs: {line}")
        check(len(summary["operators"]) == 24, f"summary rows: {len(summary['operators'])}")
        proc = run(["trials", str(summary["run_id"])], db)
        check(proc.returncode == 0 and "its trials are in its kernel runs" in proc.stdout, f"trials: {proc.stdout}")
        page = os.path.join(tmp, "model.html")
        proc = run(["report", str(summary["run_id"]), "-o", page], db)
        check(proc.returncode == 0, proc.stderr)
        html = open(page).read()
        embedded = re.search(r'<script type="application/json" id="autotune-data">(.*?)</script>', html, re.S)
        doc = json.loads(embedded.group(1))["runs"][0]
        model = doc["model"]
        check("timelines" not in doc and doc["evaluations"] == summary["evaluations"], f"report: {sorted(doc)}")
        check(model["forward_before_s"] == summary["baseline_latency_s"] and
              model["forward_after_s"] == summary["best_latency_s"], f"report forward: {model}")
        rows = {r["operator"]: r for r in model["operators"]}
        check(len(rows) == 24, f"report rows: {sorted(rows)}")
        for name, r in rows.items():
            check(r["baseline_latency_s"] > 0 and r["latency_s"] > 0 and r["speedup"] > 0 and r["shape"] and r["kernel"],
                  f"{name}: {r}")
        check(abs(sum(r["share_percent"] for r in rows.values()) - 100) < 0.1, "report shares do not add up")
        tuned_rows = [r for r in rows.values() if r["run"] is not None]
        check(tuned_rows and all(r["evaluations"] > 0 and r["run"] in summary["kernel_runs"] for r in tuned_rows),
              f"tuned rows: {tuned_rows}")
        check(sum(k["evaluations"] for k in model["kernel_runs"]) == summary["evaluations"],
              f"kernel runs: {model['kernel_runs']}")

        # Bad input: one line naming file:line: key, exit 2, before anything is simulated.
        bad = write_goal(tmp, "bad-model.yaml", open(MODEL).read().replace("layers: 28", "layers: 0"))
        proc = run(["model", bad], db)
        check(proc.returncode == 2 and "bad-model.yaml:" in proc.stderr and "layers: 0 is out of range" in proc.stderr,
              f"layers 0: {proc.returncode} {proc.stderr}")
        check(len(proc.stderr.strip().splitlines()) == 1, f"one line expected: {proc.stderr}")
        bad = write_goal(tmp, "typo.yaml", open(MODEL).read().replace("hidden_size:", "hiden_size:"))
        proc = run(["model", bad], db)
        check(proc.returncode == 2 and "hidden_size" in proc.stderr, f"typo: {proc.stderr}")
        bad = write_goal(tmp, "notyaml.yaml", "hidden_size: [1024\n")
        proc = run(["model", bad], db)
        check(proc.returncode == 2 and "notyaml.yaml" in proc.stderr, f"not YAML: {proc.stderr}")
        proc = run(["model", MODEL, "--layers", "0"], db)
        check(proc.returncode == 2 and "--layers: 0 is out of range; accepted: 1 to 1024" in proc.stderr, f"--layers 0: {proc.stderr}")
        bad_goal = write_goal(tmp, "bad-goal.yaml", f"model: {{file: {MODEL}, layers: 1}}\ngoal: {{improvement: 2}}\n")
        proc = run(["run", bad_goal], db)
        check(proc.returncode == 2 and "bad-goal.yaml:2" in proc.stderr and "improvement" in proc.stderr,
              f"improvement 2: {proc.stderr}")
    print("ok")


if __name__ == "__main__":
    main()
