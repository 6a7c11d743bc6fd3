#!/usr/bin/env python3
"""The simulated figures of README.md and docs/*.md, produced in one place.

Simulated figures are deterministic, so a document never states one by hand: it marks where each goes,
and this script runs the command behind it and renders it.

    <!-- figures: ID -->          a whole table, regenerated between the two lines
    ...
    <!-- /figures -->
    <!--fig:ID-->42.62 ms<!--/fig-->   one figure inside prose

    scripts/figures.py [--check | --write] [--build DIR] [--jobs N] [--only SOURCE,...] [--skip-slow] [--list]

--check (the default) runs every source the documents' markers need, on fresh databases, and prints
each marker whose text differs from what a fresh run gives (file:line, the stated and the fresh text);
exit status 1 if any does. --write puts the fresh text in place. --only limits both to the markers
whose sources are named (see --list). tests/e2e/test_figures.py runs --check --skip-slow in CI; the slow
sources (the model goal on trn1) are checked by running --check by hand.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def documents_of(root):
    """README.md and docs/*.md under root, relative to it."""
    docs = os.path.join(root, "docs")
    names = sorted(name for name in os.listdir(docs) if name.endswith(".md")) if os.path.isdir(docs) else []
    return ["README.md"] + [os.path.join("docs", name) for name in names]

# ---------------------------------------------------------------------------------------------------------------
# Sources: a command each, run once, its JSON output handed to the renderers.

EXAMPLE_GOALS = ["quickstart", "gemm-article", "qwen3-attention-16k", "qwen3-attention-16k-trn2",
                 "replay-convolution", "exp-profiler"]


def run_json(command, cwd):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    # bench_calibration exits 1 when a row is outside its band; its JSON is still whole.
    if not result.stdout.strip():
        raise RuntimeError(f"{' '.join(command)} printed nothing (exit {result.returncode}):\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def goal_source(goal):
    def run(build, scratch):
        db = os.path.join(scratch, f"goal-{goal}.db")
        return run_json([os.path.join(build, "autotune"), "run", f"configs/goals/{goal}.yaml", "--json", "--db", db,
                         "--no-cache"], SOURCE)
    return run


def attention_source(build, scratch):
    return run_json([os.path.join(build, "bench", "bench_attention_qwen3"), "--json", "-"], SOURCE)


def calibration_source(build, scratch):
    return run_json([os.path.join(build, "bench", "bench_calibration"), "--json", "-"], SOURCE)


def derived_goal_source(goal, extra_yaml):
    """An example goal with top-level keys added (the goal must not name files relative to itself)."""
    def run(build, scratch):
        path = os.path.join(scratch, f"{goal}-derived.yaml")
        with open(path, "w") as out:
            out.write(open(os.path.join(SOURCE, "configs", "goals", f"{goal}.yaml")).read() + "\n" + extra_yaml + "\n")
        return run_json([os.path.join(build, "autotune"), "run", path, "--json", "--db", path + ".db", "--no-cache"],
                        SOURCE)
    return run


MODEL_GOAL = "qwen3-0.6b-4layers-16k"


def model_source(target):
    """The model goal on a target, with `autotune model` before it (all baselines; family defaults on the
    empty database) and after it (the goal's tuned kernels)."""
    def run(build, scratch):
        goal_text = open(os.path.join(SOURCE, "configs", "goals", f"{MODEL_GOAL}.yaml")).read()
        goal_path = os.path.join(SOURCE, "configs", "goals", f"{MODEL_GOAL}.yaml")
        if f"target: {target}" not in goal_text:
            # The same goal on another target: written beside the original, so its model file resolves.
            goal_text = re.sub(r"^target: \S+", f"target: {target}", goal_text, flags=re.M)
            goal_path = os.path.join(scratch, f"{MODEL_GOAL}-{target}.yaml")
            model_file = os.path.join(SOURCE, "configs", "models")
            goal_text = goal_text.replace("file: ../models/", f"file: {model_file}/")
            with open(goal_path, "w") as out:
                out.write(goal_text)
        db = os.path.join(scratch, f"model-{target}.db")
        autotune = os.path.join(build, "autotune")
        model = [autotune, "model", "configs/models/qwen3-0.6b.yaml", "--layers", "4", "--seq", "16384", "--target",
                 target, "--json", "--db", db]
        # The end-to-end check is quoted after the goal only; before it, it would only cost time.
        out = {"baseline": run_json(model + ["--baseline", "--no-verify"], SOURCE),
               "defaults": run_json(model + ["--no-verify"], SOURCE)}
        out["goal"] = run_json([autotune, "run", goal_path, "--json", "--db", db, "--no-cache"], SOURCE)
        out["after"] = run_json(model, SOURCE)
        return out
    return run


SOURCES = {f"goal:{goal}": goal_source(goal) for goal in EXAMPLE_GOALS}
SOURCES["model:trn2"] = model_source("trn2")
SOURCES["model:trn1"] = model_source("trn1")
# Sources too slow for every CI run (minutes of CPU): --skip-slow leaves their markers unchecked.
SLOW_SOURCES = {"model:trn1"}
SOURCES["goal:gemm-article+tiled-only"] = derived_goal_source("gemm-article", "variants: [tiled]")
SOURCES["attention"] = attention_source
SOURCES["calibration"] = calibration_source

# ---------------------------------------------------------------------------------------------------------------
# Formatting, one convention everywhere.


def seconds(value, digits=4):
    """A latency with `digits` significant digits in the unit that keeps it at or above 1: 32.03 us, 42.62 ms."""
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if value >= scale or unit == "us":
            number = value / scale
            decimals = max(0, digits - 1 - (len(str(int(number))) - 1))
            return f"{number:.{decimals}f} {unit}"


def ms2(value):
    """The attention tables' convention: milliseconds with two decimals, seconds from 10 s on."""
    return f"{value:.2f} s" if value >= 10 else f"{value * 1e3:.2f} ms"


def percent(value, decimals=1):
    return f"{value:.{decimals}f}%"


def ratio(value, decimals=2):
    return f"{value:.{decimals}f}x"


def params_text(params):
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()))


# ---------------------------------------------------------------------------------------------------------------
# Renderers: figure id -> (sources, function of their data).

FIGURES = {}


def figure(name, *sources):
    def register(render):
        FIGURES[name] = (sources, render)
        return render
    return register


# The NKI matmul tutorial's four steps against hardware (bench_calibration's rows).
TUTORIAL_STEPS = ["tiled", "hoisted", "blocked_mn", "blocked_mnk"]


def tutorial_rows(calibration):
    rows = {}
    for row in calibration["rows"]:
        if row["source"] == "NKI matmul tutorial" and row["family"] == "gemm":
            rows[row["variant"]] = row
    return [rows[step] for step in TUTORIAL_STEPS]


@figure("tutorial-table", "calibration")
def _(calibration):
    lines = ["| tutorial step | simulated | measured | ratio |", "|---|---|---|---|"]
    for row in tutorial_rows(calibration):
        simulated = f"{row['simulated_ms']:.2f} ms"
        measured = f"{row['measured_ms']:.2f} ms"
        if row["variant"] == "blocked_mnk":
            simulated += f" (MFU {row['mfu_percent']:.1f} %)"
            measured += " (~86 % of peak)"
        lines.append(f"| `{row['variant']}` | {simulated} | {measured} | {row['ratio']:.2f} |")
    return "\n".join(lines)


@figure("calibration-table", "calibration")
def _(calibration):
    lines = ["| source | kernel | shape | target | measured ms | simulated ms | ratio | fitted on |",
             "|---|---|---|---|---|---|---|---|"]
    for row in calibration["rows"]:
        shape = ",".join(f"{k}={v}" for k, v in sorted(row["shape"].items()))
        simulated = f"{row['simulated_ms']:.4g}" if row["valid"] else "invalid"
        ratio_text = f"{row['ratio']:.2f}" if row["valid"] else ""
        lines.append(f"| {row['source']} | {row['family']}/{row['variant']} | {shape} {row['dtype']} | {row['target']} | "
                     f"{row['measured_ms']:g} | {simulated} | {ratio_text} | {'yes' if row['fit'] else 'no'} |")
    return "\n".join(lines)


@figure("calibration.in_band", "calibration")
def _(calibration):
    return str(sum(1 for row in calibration["rows"] if row["in_band"]))


@figure("calibration.rows", "calibration")
def _(calibration):
    return str(len(calibration["rows"]))


@figure("tutorial-ratios", "calibration")
def _(calibration):
    return "/".join(f"{row['ratio']:.2f}" for row in tutorial_rows(calibration))


def attention_rows(data):
    return {(row["target"], row["seq"], row["variant"]): row for row in data}


def attention_cell(row):
    if row is None:
        return "not timed"
    if not row["valid"]:
        rule = row.get("rule", "")  # as the bench's own table names it: the resource overflowed, else the rule
        reason = "SBUF" if rule.startswith("sbuf") else "PSUM" if rule.startswith("psum") else rule or "does not fit"
        return f"invalid ({reason})"
    return f"{ms2(row['latency_s'])}, {percent(row['mfu_percent'])}"


@figure("attention-table", "attention")
def _(data):
    rows = attention_rows(data)
    lines = ["| target | seq | naive | flash (tuned) | cte (library) | flash_banked | banked over naive | cte / banked |",
             "|---|---|---|---|---|---|---|---|"]
    for target, seq in (("trn2", 2048), ("trn2", 4096), ("trn2", 16384), ("trn2", 32768), ("trn1", 16384),
                        ("trn1", 32768)):
        naive, flash, cte, banked = (rows.get((target, seq, v)) for v in ("naive", "flash", "cte", "flash_banked"))

        def over(row, decimals, suffix):
            if not (row and row["valid"] and banked and banked["valid"]):
                return ""
            return f"{row['latency_s'] / banked['latency_s']:.{decimals}f}{suffix}"

        lines.append(f"| {target} | {seq // 1024}K | {attention_cell(naive)} | {attention_cell(flash)} | "
                     f"{attention_cell(cte)} | {attention_cell(banked)} | {over(naive, 1, 'x')} | {over(cte, 2, '')} |")
    return "\n".join(lines)


@figure("attention-table-all", "attention")
def _(data):
    rows = attention_rows(data)
    lines = ["| target | seq | naive | flash | cte | flash_banked | naive / banked | cte / banked |",
             "|---|---|---|---|---|---|---|---|"]
    for target in ("trn1", "trn2"):
        for seq in (1024, 2048, 4096, 8192, 16384, 32768):
            naive, flash, cte, banked = (rows.get((target, seq, v)) for v in ("naive", "flash", "cte", "flash_banked"))

            def over(row):
                if not (row and row["valid"] and banked and banked["valid"]):
                    return ""
                return f"{row['latency_s'] / banked['latency_s']:.1f}x"

            lines.append(f"| {target} | {seq // 1024}K | {attention_cell(naive)} | {attention_cell(flash)} | "
                         f"{attention_cell(cte)} | {attention_cell(banked)} | {over(naive)} | {over(cte)} |")
    return "\n".join(lines)


def attention_value(target, seq, variant, field):
    @figure(f"attention.{target}.{seq // 1024}k.{variant}.{field}", "attention")
    def _(data):
        row = attention_rows(data)[(target, seq, variant)]
        return ms2(row["latency_s"]) if field == "latency" else percent(row["mfu_percent"])


for _target in ("trn1", "trn2"):
    for _seq in (2048, 4096, 16384, 32768):
        for _variant in ("naive", "flash", "cte", "flash_banked"):
            for _field in ("latency", "mfu"):
                attention_value(_target, _seq, _variant, _field)


def cte_over_banked(seq):
    @figure(f"attention.trn2.{seq // 1024}k.cte_over_banked", "attention")
    def _(data):
        rows = attention_rows(data)
        return ratio(rows[("trn2", seq, "cte")]["latency_s"] / rows[("trn2", seq, "flash_banked")]["latency_s"])


for _seq in (2048, 4096, 16384):
    cte_over_banked(_seq)

# The example goals' loop runs.
GOAL_LABELS = {
    "quickstart": "quickstart",
    "gemm-article": "gemm-article (20% throughput from the tutorial's `tiled`)",
    "qwen3-attention-16k": "qwen3-attention-16k (trn1, 8.3x asked)",
    "qwen3-attention-16k-trn2": "qwen3-attention-16k-trn2 (trn2, 50% MFU asked)",
    "replay-convolution": "replay-convolution",
    "exp-profiler": "exp-profiler (2x over naive asked)",
}


def trial_text(trial, with_mfu):
    variant = trial["variant"]
    text = seconds(trial["latency_s"])
    if variant != "recorded":
        text = f"{variant} {text}"
    if with_mfu and trial.get("mfu_percent"):
        text += f", MFU {percent(trial['mfu_percent'])}"
    return text


def speedup_text(speedup):
    """Three significant digits: 1.27x, 9.96x, 12.8x."""
    return f"{speedup:.{max(0, 2 - len(str(int(speedup))) + 1)}f}x"


def improvement_text(run):
    improvement, objective = run["improvement"], run["objective"]
    if improvement <= 0:
        text = "none"
    elif objective == "latency":
        text = f"{percent(improvement * 100)} latency ({speedup_text(run['speedup'])})"
    elif objective == "throughput":
        text = f"+{percent(improvement * 100)} throughput"
    else:  # an MFU goal: how far the kernel moved
        text = speedup_text(run["speedup"])
    return text + (", goal met" if run["goal_met"] else ": not met")


@figure("goals-table", *[f"goal:{goal}" for goal in EXAMPLE_GOALS])
def _(*runs):
    lines = ["| goal | baseline | best | improvement | evaluations |", "|---|---|---|---|---|"]
    for goal, run in zip(EXAMPLE_GOALS, runs):
        with_mfu = goal not in ("quickstart", "exp-profiler")
        lines.append(f"| {GOAL_LABELS[goal]} | {trial_text(run['baseline'], with_mfu)} | "
                     f"{trial_text(run['best'], with_mfu)} | {improvement_text(run)} | {run['evaluations']} |")
    return "\n".join(lines)


def stop_text(run):
    reason = run["stop_reason"]
    return "goal met" if reason.startswith("goal met") else reason.split(" (")[0]


@figure("goals-table-detailed", *[f"goal:{goal}" for goal in EXAMPLE_GOALS])
def _(*runs):
    lines = ["| goal | baseline | best | configuration | improvement | evaluations | stop |",
             "|---|---|---|---|---|---|---|"]
    for goal, run in zip(EXAMPLE_GOALS, runs):
        best = run["best"]
        lines.append(f"| {goal} | {trial_text(run['baseline'], True)} | {trial_text(best, True)} | "
                     f"{params_text(best['params']) or '-'} | {improvement_text(run).split(',')[0].split(':')[0]} | "
                     f"{run['evaluations']} | {stop_text(run)} |")
    return "\n".join(lines)


def goal_values(goal):
    source = f"goal:{goal}"
    figure(f"{goal}.baseline", source)(lambda run: trial_text(run["baseline"], False))
    figure(f"{goal}.best", source)(lambda run: trial_text(run["best"], False))
    figure(f"{goal}.best.latency", source)(lambda run: seconds(run["best"]["latency_s"]))
    figure(f"{goal}.best.mfu", source)(lambda run: percent(run["best"]["mfu_percent"]))
    figure(f"{goal}.best.params", source)(lambda run: params_text(run["best"]["params"]))
    figure(f"{goal}.speedup", source)(lambda run: speedup_text(run["speedup"]))
    figure(f"{goal}.evaluations", source)(lambda run: str(run["evaluations"]))


for _goal in EXAMPLE_GOALS + ["gemm-article+tiled-only"]:
    goal_values(_goal)
figure("gemm-article+tiled-only.improvement", "goal:gemm-article+tiled-only")(
    lambda run: improvement_text(run).split(",")[0])

# The model goal, and `autotune model` around it.


def operator_share(model_run, family):
    return sum(op["share_percent"] for op in model_run["operators"] if op["family"] == family)


def end_to_end_text(check):
    mantissa, exponent = f"{check['mse']:.1e}".split("e")
    return f"MSE {mantissa}e{int(exponent)}, cosine {check['cosine_similarity']:.5f}"


def model_values(target):
    source = f"model:{target}"
    for phase in ("baseline", "defaults", "after"):
        def forward(phase):
            figure(f"model.{target}.{phase}", source)(lambda d: seconds(d[phase]["forward"]["latency_s"]))
            figure(f"model.{target}.{phase}.mfu", source)(lambda d: percent(d[phase]["forward"]["mfu_percent"]))
            figure(f"model.{target}.{phase}.attention_share", source)(
                lambda d: percent(operator_share(d[phase], "attention")))
        forward(phase)
    figure(f"model.{target}.goal", source)(lambda d: seconds(d["goal"]["best_latency_s"]))
    figure(f"model.{target}.goal.speedup", source)(lambda d: f"{d['goal']['speedup']:.2f}x")
    figure(f"model.{target}.goal.mfu", source)(lambda d: percent(d["goal"]["best_mfu_percent"]))
    figure(f"model.{target}.goal.evaluations", source)(lambda d: str(d["goal"]["evaluations"]))
    figure(f"model.{target}.goal.attention_share", source)(
        lambda d: percent(sum(op["share_percent"] for op in d["goal"]["operators"] if op["family"] == "attention")))
    figure(f"model.{target}.goal.kernel_loops", source)(lambda d: str(len(d["goal"]["kernel_runs"])))
    figure(f"model.{target}.goal.end_to_end", source)(lambda d: end_to_end_text(d["goal"]["end_to_end"]))
    figure(f"model.{target}.after.end_to_end", source)(lambda d: end_to_end_text(d["after"]["end_to_end"]))
    figure(f"model.{target}.after.over_roofline", source)(
        lambda d: f"{d['after']['forward']['latency_s'] / d['after']['forward']['roofline_bound_s']:.2f}x")
    figure(f"model.{target}.roofline_sum", source)(lambda d: seconds(d["baseline"]["forward"]["roofline_bound_s"]))


for _target in ("trn2", "trn1"):
    model_values(_target)


@figure("model-operators-trn2", "model:trn2")
def _(d):
    goal = d["goal"]
    lines = ["| operator | calls | all baseline, total | share | tuned by the goal, total | share | configuration |",
             "|---|---|---|---|---|---|---|"]
    for op in goal["operators"]:
        before = op["baseline_latency_s"] * op["calls"]
        after = op["latency_s"] * op["calls"]
        lines.append(f"| {op['operator']} | {op['calls']} | {seconds(before)} | "
                     f"{percent(100 * before / goal['baseline_latency_s'])} | {seconds(after)} | "
                     f"{percent(op['share_percent'])} | {op['configuration']} ({op['source']}) |")
    return "\n".join(lines)


@figure("model-table", "model:trn2", "model:trn1")
def _(*runs):
    def both(render):
        return " | ".join(render(d) for d in runs)

    def forward(phase):
        return lambda d: (f"{seconds(d[phase]['forward']['latency_s'])}, MFU {percent(d[phase]['forward']['mfu_percent'])} "
                          f"(attention {percent(operator_share(d[phase], 'attention'))})")

    def goal(d):
        g = d["goal"]
        return (f"{seconds(g['best_latency_s'])}, {g['speedup']:.2f}x, MFU {percent(g['best_mfu_percent'])}, "
                f"{'goal met' if g['goal_met'] else 'not met'}; {g['evaluations']} evaluations in "
                f"{len(g['kernel_runs'])} kernel loop(s)")

    return "\n".join([
        "| | trn2 | trn1 |",
        "|---|---|---|",
        f"| all baseline (`autotune model ... --baseline`) | {both(forward('baseline'))} |",
        f"| family defaults, nothing tuned (`autotune model`, empty database) | {both(forward('defaults'))} |",
        f"| model goal (`autotune run configs/goals/{MODEL_GOAL}.yaml`) | {both(goal)} |",
        f"| after the goal, `autotune model` (its tuned kernels where faster than the defaults, defaults elsewhere) | {both(forward('after'))} |",
        f"| sum of the operators' roofline bounds | {both(lambda d: seconds(d['baseline']['forward']['roofline_bound_s']))} |",
        f"| end-to-end check at seq {runs[0]['after']['end_to_end']['seq']} | "
        f"{both(lambda d: end_to_end_text(d['after']['end_to_end']))} |",
    ])

# ---------------------------------------------------------------------------------------------------------------
# Markers.

TABLE_START = re.compile(r"^<!-- figures: (\S+) -->$")
TABLE_END = "<!-- /figures -->"
INLINE = re.compile(r"<!--fig:(\S+?)-->(.*?)<!--/fig-->")


class Marker:
    def __init__(self, document, line, name, text, span):
        self.document, self.line, self.name, self.text, self.span = document, line, name, text, span


def markers_of(root, document):
    """Every marker of a document, with the text it holds and where that text lies."""
    lines = open(os.path.join(root, document)).read().split("\n")
    found, index = [], 0
    while index < len(lines):
        start = TABLE_START.match(lines[index])
        if start:
            end = next((j for j in range(index + 1, len(lines)) if lines[j] == TABLE_END), None)
            if end is None:
                raise SystemExit(f"{document}:{index + 1}: '<!-- figures: {start.group(1)} -->' has no "
                                 f"'{TABLE_END}' after it")
            found.append(Marker(document, index + 1, start.group(1), "\n".join(lines[index + 1:end]),
                                ("lines", index + 1, end)))
            index = end + 1
            continue
        for match in INLINE.finditer(lines[index]):
            found.append(Marker(document, index + 1, match.group(1), match.group(2), ("inline", index, match.span(2))))
        index += 1
    return found


def rewrite(root, document, markers, fresh):
    lines = open(os.path.join(root, document)).read().split("\n")
    # Back to front, so earlier spans stay where they were.
    for marker in sorted(markers, key=lambda m: (m.span[1], m.span[2] if m.span[0] == "inline" else (0, 0)),
                         reverse=True):
        if marker.span[0] == "lines":
            _, first, end = marker.span
            lines[first:end] = fresh[marker].split("\n")
        else:
            _, index, (begin, stop) = marker.span
            lines[index] = lines[index][:begin] + fresh[marker] + lines[index][stop:]
    with open(os.path.join(root, document), "w") as out:
        out.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare the documents with fresh runs (default)")
    mode.add_argument("--write", action="store_true", help="put fresh figures into the documents")
    parser.add_argument("--list", action="store_true", help="list the sources and the figures, then exit")
    parser.add_argument("--build", default=os.path.join(SOURCE, "build"), help="the build folder (default: build/)")
    parser.add_argument("--root", default=SOURCE, help="where README.md and docs/ are (default: this checkout)")
    parser.add_argument("--jobs", type=int, default=2, help="sources run at once (default 2)")
    parser.add_argument("--only", default="", help="comma-separated sources: only the markers using them")
    parser.add_argument("--skip-slow", action="store_true",
                        help=f"leave the markers of the slow sources ({', '.join(sorted(SLOW_SOURCES))}) unchecked")
    args = parser.parse_args()

    if args.list:
        for name in SOURCES:
            print(f"source {name}")
        for name, (sources, _) in FIGURES.items():
            print(f"figure {name}  <- {', '.join(sources)}")
        return 0

    only = set(filter(None, args.only.split(",")))
    unknown = only - set(SOURCES)
    if unknown:
        print(f"figures: unknown source(s) {', '.join(sorted(unknown))} (accepted: {', '.join(SOURCES)})",
              file=sys.stderr)
        return 2
    documents = documents_of(args.root)
    markers = [m for document in documents for m in markers_of(args.root, document)]
    problems = [f"{m.document}:{m.line}: no figure is named '{m.name}' (scripts/figures.py --list)"
                for m in markers if m.name not in FIGURES]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    if only:
        markers = [m for m in markers if set(FIGURES[m.name][0]) <= only]
    skipped = 0
    if args.skip_slow:
        kept = [m for m in markers if not set(FIGURES[m.name][0]) & SLOW_SOURCES]
        skipped, markers = len(markers) - len(kept), kept
    needed = sorted({source for m in markers for source in FIGURES[m.name][0]})

    data = {}
    with tempfile.TemporaryDirectory(prefix="autotune-figures-") as scratch:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {name: pool.submit(SOURCES[name], args.build, scratch) for name in needed}
            for name, future in futures.items():
                data[name] = future.result()

    fresh = {m: FIGURES[m.name][1](*(data[s] for s in FIGURES[m.name][0])) for m in markers}
    stale = [m for m in markers if fresh[m] != m.text]
    if args.write:
        for document in documents:
            mine = [m for m in stale if m.document == document]
            if mine:
                rewrite(args.root, document, mine, fresh)
        for m in stale:
            print(f"{m.document}:{m.line}: {m.name} rewritten")
        print(f"figures: {len(markers)} markers from {len(needed)} sources, {len(stale)} rewritten")
        return 0
    for m in stale:
        if "\n" in fresh[m] or "\n" in m.text:
            print(f"{m.document}:{m.line}: {m.name}: the document's table differs from a fresh run:")
            stated, now = m.text.split("\n"), fresh[m].split("\n")
            for a, b in zip(stated + [""] * (len(now) - len(stated)), now + [""] * (len(stated) - len(now))):
                if a != b:
                    print(f"    document: {a}\n    fresh:    {b}")
        else:
            print(f"{m.document}:{m.line}: {m.name}: the document says '{m.text}', a fresh run gives '{fresh[m]}'")
    print(f"figures: {len(markers)} markers from {len(needed)} sources, {len(stale)} stale"
          + (f", {skipped} of slow sources not checked" if skipped else "")
          + (" (scripts/figures.py --write puts the fresh ones in)" if stale else ""))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
