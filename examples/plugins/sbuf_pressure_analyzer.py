#!/usr/bin/env python3
"""A profile_analyzer plugin for autotune (docs/plugins.md): SBUF and PSUM pressure.

Declared in a goal as

    skills:
      - name: sbuf-pressure
        command: [python3, ../../examples/plugins/sbuf_pressure_analyzer.py]  # a goal in configs/goals/
        role: profile_analyzer
        after: profile_analyzer

For each request it reads the profile summary of the best candidate so far and adds one finding,
`sbuf_pressure`, with the peak SBUF bytes per partition against the usable bytes and the PSUM banks in
use. When SBUF is nearly full (--limit, default 80%) it also turns the built-in analyzer's `raise`
findings into informative ones: raising tiles or pipeline depth would not fit. Without SBUF figures in
the profile (e.g. a command target that prints none) it returns the built-in analysis unchanged.
"""
import argparse
import json
import sys


def analyse(request, limit_percent):
    analysis = dict(request.get("builtin") or {"bound": "unknown", "findings": [], "at_roofline": False,
                                               "headroom": 0})
    findings = [dict(f) for f in analysis.get("findings", [])]
    profile = request.get("profile") or {}
    peak = profile.get("sbuf_peak_bytes_per_partition")
    usable = profile.get("sbuf_usable_bytes_per_partition")
    if not isinstance(peak, (int, float)) or not isinstance(usable, (int, float)) or usable <= 0:
        decision = {"action": "no_finding", "rationale": "the profile has no SBUF figures", "evidence": {}}
        return analysis, decision

    used = 100.0 * peak / usable
    evidence = {"sbuf_peak_bytes_per_partition": peak, "sbuf_usable_bytes_per_partition": usable,
                "sbuf_used_percent": round(used, 2)}
    if isinstance(profile.get("psum_peak_banks"), (int, float)) and isinstance(profile.get("psum_banks"), (int, float)):
        evidence["psum_peak_banks"] = profile["psum_peak_banks"]
        evidence["psum_banks"] = profile["psum_banks"]
    full = used >= limit_percent
    demoted = []
    if full:
        for finding in findings:
            if finding.get("action") == "raise":
                finding["action"] = "none"
                demoted.append(finding.get("kind", "?"))
    summary = (f"SBUF peak {peak:.0f} of {usable:.0f} bytes per partition ({used:.1f}%)" +
               ("; raising tiles or pipeline depth would not fit" if full else "; room for larger tiles or deeper pipelines"))
    findings.append({"kind": "sbuf_pressure", "summary": summary, "evidence": evidence, "action": "none",
                     "roles": [], "expected_gain": 0.0})
    analysis["findings"] = findings
    rationale = f"SBUF is {used:.1f}% used at its peak (limit {limit_percent:g}%)"
    if demoted:
        rationale += "; made informative: " + ", ".join(demoted)
    return analysis, {"action": "add_finding", "rationale": rationale, "evidence": evidence}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=80.0, help="SBUF use (percent) counted as full")
    args = parser.parse_args()
    for line in sys.stdin:  # one request per line; ends when autotune closes stdin
        if not line.strip():
            continue
        try:
            message = json.loads(line)
            if message.get("role") != "profile_analyzer":
                raise ValueError(f"this plugin analyses profiles, not {message.get('role')!r} requests")
            analysis, decision = analyse(message.get("request") or {}, args.limit)
            reply = {"result": analysis, "decision": decision}
        except Exception as error:  # a refusal, not a crash: autotune logs it and uses the built-in result
            print(f"sbuf_pressure_analyzer: {error!r}", file=sys.stderr)
            reply = {"error": str(error)}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
