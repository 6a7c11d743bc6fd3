#!/usr/bin/env python3
"""Compares suites of recorded spaces at equal evaluations.

A space's score averages P(M) over its own window [B(0.01), B(0.95)], so a space with a budget of 10
is judged only on a strategy's first ten evaluations and one with a budget of 300 mostly on its last
ones: the two scores measure different things. This prints P(M) at chosen evaluation counts M, the
mean over the spaces whose curves reach M (a curve runs to its window's end or its longest trace), from
the scores that
`autotune search-bench FILES --score TRACES --json SCORES` writes (their "curve").

  python3 bench/budget_curve.py LABEL=SCORES.json [LABEL=SCORES.json ...] [--at 2,5,10,20,30,50]

Each row is one scores file: its mean score, then mean P(M) (and, in brackets, how many spaces reach M).
"""
import argparse
import json
import statistics
import sys


def curve_means(scores, at):
    """{M: (mean P(M) over the spaces whose curve reaches M, how many)}."""
    out = {}
    for m in at:
        values = [entry["curve"][m - 1] for entry in scores.values() if len(entry.get("curve", [])) >= m]
        out[m] = (statistics.mean(values), len(values)) if values else (None, 0)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scores", nargs="+", metavar="LABEL=SCORES.json")
    parser.add_argument("--at", default="2,5,10,20,30,50", help="evaluation counts, comma-separated")
    args = parser.parse_args()
    try:
        at = [int(m) for m in args.at.split(",")]
    except ValueError:
        sys.exit(f"budget_curve: --at {args.at!r}: expected positive integers separated by commas")
    if any(m < 1 for m in at):
        sys.exit(f"budget_curve: --at {args.at!r}: evaluation counts start at 1")
    rows = []
    for item in args.scores:
        label, separator, path = item.partition("=")
        if not separator:
            sys.exit(f"budget_curve: {item!r}: expected LABEL=SCORES.json")
        try:
            scores = json.load(open(path))
        except (OSError, ValueError) as error:
            sys.exit(f"budget_curve: {path}: {error}")
        if not scores or not all("curve" in entry for entry in scores.values()):
            sys.exit(f"budget_curve: {path}: no \"curve\" per space (write it with search-bench --score --json)")
        rows.append((label, statistics.mean(entry["score"] for entry in scores.values()), curve_means(scores, at)))
    print("| scores | spaces' mean score | " + " | ".join(f"P({m})" for m in at) + " |")
    print("|---" * (len(at) + 2) + "|")
    for label, score, means in rows:
        cells = [f"{mean:.3f} ({count})" if mean is not None else "-" for mean, count in means.values()]
        print(f"| {label} | {score:.3f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
