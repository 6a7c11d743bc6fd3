"""The LLM endpoint end to end: `autotune run` against an OpenAI-compatible fake server started here.

Cases: a good answer (accepted, steers the run, proposer llm:<model>), its replay with the server gone
(same decisions, from the cache), an endpoint that is down, one that times out, HTTP 500, a reply that
is not JSON, valid JSON naming a value outside a parameter's domain, a kernel source (compiled,
verified and measured through the kernel worker as a trial of its own), and one that does not compile
(rejected, and a failed trial holding the compiler's message). Every run must complete (exit
0) and say in llm_calls and the decision log what happened. The API key must reach the server and
appear nowhere else: not in the database, not in the output."""
import http.server
import json
import os
import socket
import threading
import time

from loop_support import check, fail, query, run, tempdir, write_goal

MODEL = "e2e-model"
KEY_ENV = "AUTOTUNE_E2E_LLM_KEY"
KEY = "sk-e2e-secret-5f1c9a7d"
HOSTILE_MARKER = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"autotune-hostile-{os.getpid()}")

GOOD = '{"variant": "hoisted", "region": {"tile_n": [256, 512], "pipeline_depth": [2, 3]}, "rationale": "fewer reloads"}'
REPLIES = {
    "good": (200, GOOD, 0),
    "slow": (200, GOOD, 2.5),
    "http500": (500, None, 0),
    "malformed": (200, '{"variant": "hoisted", "region": {"tile_n": [256, ', 0),
    "badvalue": (200, '{"variant": "tiled", "region": {"tile_m": [96]}}', 0),
    "escapes": (200, '{"variant": "nope\\u001b[2J\\u001b[31mRED", "rationale": "x"}', 0),
}


class FakeEndpoint:
    """An OpenAI-compatible /v1/chat/completions on 127.0.0.1, answering per `mode`."""

    def __init__(self, mode, suffix="", fixed_source=None):
        self.mode = mode
        self.suffix = suffix  # appended to an echoed source (test_sandbox.py's probes)
        self.fixed_source = fixed_source  # mode "fixed_source": the kernel source every answer holds
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                       "body": json.loads(body)})
                status, content, delay = REPLIES.get(outer.mode, (200, GOOD, 0))
                system = outer.requests[-1]["body"]["messages"][0]["content"]
                if outer.mode in ("source", "broken_source", "hostile_source") and \
                        system.startswith("You write kernels"):
                    # Echo the current best's exported source back as the "new" kernel (broken: plus a line
                    # that is not C++).
                    user = outer.requests[-1]["body"]["messages"][1]["content"]
                    start = user.index("\n", user.index("```cpp", user.index("standalone kernel source"))) + 1
                    source = user[start:user.index("```", start)]
                    if outer.mode == "broken_source":
                        source += "\nint broken = undeclared_in_llm_source;\n"
                    if outer.mode == "hostile_source":  # runs when the worker loads the kernel
                        source += ("\n#include <cstdlib>\n"
                                   f"static const int hostile = std::system(\"touch {HOSTILE_MARKER}\");\n")
                    content = json.dumps({"source": source + outer.suffix, "rationale": "echo"})
                if outer.mode == "fixed_source" and system.startswith("You write kernels"):
                    content = json.dumps({"source": outer.fixed_source, "rationale": "fixed"})
                time.sleep(delay)
                if status != 200:
                    payload = json.dumps({"error": {"message": "the model is overloaded"}})
                else:
                    payload = json.dumps({"id": "x", "object": "chat.completion", "model": MODEL,
                                          "choices": [{"index": 0, "finish_reason": "stop",
                                                       "message": {"role": "assistant", "content": content}}],
                                          "usage": {"prompt_tokens": 100, "completion_tokens": 20}})
                data = payload.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout case)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def goal_text(port, timeout_s=1.0, max_calls=2, kernel_sources=0):
    return f"""name: llm-e2e
kernel: {{family: gemm, shape: {{M: 256, N: 512, K: 512}}, dtype: bf16}}
objective: latency
goal: {{improvement: 0.95}}
max_iterations: 2
budget: {{evaluations: 8, wall_time_s: 60}}
search: {{strategy: random, batch_size: 2}}
start: {{variant: tiled}}
parallel: 2
seed: 5
llm: {{endpoint: "http://127.0.0.1:{port}/v1", model: {MODEL}, api_key_env: {KEY_ENV}, timeout_s: {timeout_s}, max_calls: {max_calls}, kernel_sources: {kernel_sources}}}
"""


def run_case(directory, name, port, **goal_options):
    goal = write_goal(directory, f"{name}.yaml", goal_text(port, **goal_options))
    db = os.path.join(directory, f"{name}.db")
    proc = run(["run", goal, "--json"], db, timeout=120,
               env_extra={KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    if proc.returncode != 0:
        fail(f"{name}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    check(summary["status"] == "completed", f"{name}: status {summary['status']}")
    check(KEY not in proc.stdout and KEY not in proc.stderr, f"{name}: the API key was printed")
    return db, summary, proc


def calls(db, run_id):
    return query(db, "SELECT accepted, reject_reason, response, request, latency_ms FROM llm_calls "
                     "WHERE run = ? ORDER BY id", (run_id,))


def policy_decisions(db, run_id):
    return query(db, "SELECT proposer, action, rationale, evidence FROM decisions WHERE run = ? AND "
                     "skill = 'orchestrator' AND (action LIKE 'try:%' OR action = 'stop') ORDER BY seq", (run_id,))


def check_key_absent(db, name):
    for path in (db, db + "-wal", db + "-shm"):
        if os.path.exists(path):
            with open(path, "rb") as f:
                check(KEY.encode() not in f.read(), f"{name}: the API key is in {os.path.basename(path)}")


def check_fallback(db, summary, name, reason_part):
    rows = calls(db, summary["run_id"])
    check(len(rows) >= 1, f"{name}: no llm_calls row")
    for accepted, reason, _response, _request, _latency in rows:
        check(accepted == 0, f"{name}: a call was accepted")
        check(reason_part in reason, f"{name}: reject reason {reason!r} lacks {reason_part!r}")
    decisions = policy_decisions(db, summary["run_id"])
    check(decisions, f"{name}: no policy decision")
    for proposer, action, rationale, _evidence in decisions:
        check(proposer == "rules", f"{name}: proposer {proposer}")
        if action != "stop":
            check("the LLM's answer was not used" in rationale, f"{name}: rationale {rationale!r}")
    check_key_absent(db, name)
    return rows


def main():
    holder = tempdir()
    directory = holder.name

    # A good answer: accepted, steers the iteration, the key reaches the server only.
    server = FakeEndpoint("good")
    db, summary, _ = run_case(directory, "good", server.port)
    rows = calls(db, summary["run_id"])
    check(rows and rows[0][0] == 1, f"good: first call not accepted: {rows}")
    check(rows[0][2] == GOOD, "good: response not logged")
    decisions = policy_decisions(db, summary["run_id"])
    check(decisions and decisions[0][0] == f"llm:{MODEL}", f"good: proposer {decisions[:1]}")
    check(decisions[0][1] == "try:llm", f"good: action {decisions[0][1]}")
    variants = {v for (v,) in query(db, "SELECT variant FROM trials WHERE run = ?", (summary["run_id"],))}
    check("hoisted" in variants, f"good: the named variant was not measured: {variants}")
    check(server.requests and server.requests[0]["path"] == "/v1/chat/completions", "good: wrong path")
    check(server.requests[0]["auth"] == f"Bearer {KEY}", "good: the key did not reach the server")
    check(KEY not in json.dumps(server.requests[0]["body"]), "good: the key is in the request body")
    check_key_absent(db, "good")
    server.stop()

    # Replay with the endpoint gone: same goal, same seed, same database: same decisions.
    goal = os.path.join(directory, "good.yaml")
    proc = run(["run", goal, "--json"], db, timeout=120, env_extra={KEY_ENV: KEY})
    check(proc.returncode == 0, f"replay: exit {proc.returncode}: {proc.stderr[-2000:]}")
    replay = json.loads(proc.stdout)
    again = policy_decisions(db, replay["run_id"])
    check([d[:3] for d in again] == [d[:3] for d in decisions], f"replay: decisions differ:\n{again}\n{decisions}")
    for _accepted, _reason, _response, request, latency in calls(db, replay["run_id"]):
        check("autotune_cached_from_call" in json.loads(request), "replay: a call was not served from the cache")
    same = lambda s: (s["best"]["variant"], s["best"]["params"])
    check(same(replay) == same(summary), f"replay: a different best: {same(replay)} vs {same(summary)}")

    # Endpoint down.
    db, summary, proc = run_case(directory, "down", closed_port())
    check_fallback(db, summary, "down", "unreachable")
    check("autotune: warning: the LLM's answer was not used" in proc.stderr and "unreachable" in proc.stderr,
          f"down: an unreachable endpoint must be said on screen: {proc.stderr[-1000:]}")
    check(any("docs/llm.md" in w for w in summary["warnings"]), f"down: warnings {summary['warnings']}")

    # A reply slower than timeout_s.
    server = FakeEndpoint("slow")
    db, summary, _ = run_case(directory, "slow", server.port, timeout_s=0.5, max_calls=1)
    check_fallback(db, summary, "slow", "timeout: no reply within 0.5 s")
    server.stop()

    # HTTP 500.
    server = FakeEndpoint("http500")
    db, summary, _ = run_case(directory, "http500", server.port)
    check_fallback(db, summary, "http500", "http_error: HTTP 500: the model is overloaded")
    server.stop()

    # Not JSON.
    server = FakeEndpoint("malformed")
    db, summary, _ = run_case(directory, "malformed", server.port)
    check_fallback(db, summary, "malformed", "malformed reply")
    server.stop()

    # Valid JSON, a value outside the parameter's domain.
    server = FakeEndpoint("badvalue")
    db, summary, _ = run_case(directory, "badvalue", server.port)
    rows = check_fallback(db, summary, "badvalue", "value 96 is not in the domain of 'tile_m' in variant 'tiled'")
    check(len(server.requests) <= 2, "badvalue: max_calls 2 exceeded")
    server.stop()

    # Escape sequences in an answer reach the terminal shown, not obeyed: the warning and the summary
    # quote the unknown variant's name.
    server = FakeEndpoint("escapes")
    goal = write_goal(directory, "escapes.yaml", goal_text(server.port))
    proc = run(["run", goal], os.path.join(directory, "escapes.db"), timeout=120,
               env_extra={KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    check(proc.returncode == 0, f"escapes: exit {proc.returncode}: {proc.stderr[-1000:]}")
    check("unknown variant 'nope\\x1b[2J" in proc.stderr and "nope\\x1b[2J" in proc.stdout,
          f"escapes: the name is not quoted: {proc.stderr[-1000:]}")
    check("\x1b" not in proc.stdout + proc.stderr, "escapes: a raw escape sequence reached the terminal")
    server.stop()

    # A kernel source: compiled, verified and measured through the kernel worker, a trial of its own.
    server = FakeEndpoint("source")
    db, summary, _ = run_case(directory, "source", server.port, max_calls=3, kernel_sources=1)
    rows = query(db, "SELECT proposer, evidence, seq FROM decisions WHERE run = ? AND action = 'propose_source'",
                 (summary["run_id"],))
    check(len(rows) == 1, f"source: {len(rows)} propose_source decisions")
    proposer, evidence, seq = rows[0]
    check(proposer == f"llm:{MODEL}", f"source: proposer {proposer}: {evidence}")
    kernel = json.loads(evidence)["kernel"]
    trials = query(db, "SELECT status, verification FROM trials WHERE run = ? AND variant = ? AND decision_seq = ?",
                   (summary["run_id"], kernel["name"], seq))
    check(len(trials) == 1 and trials[0][0] == "ok", f"source: trial {trials}")
    check(json.loads(trials[0][1]).get("cosine") is not None, "source: the trial was not verified")
    server.stop()

    # A kernel source that does not compile: rejected, and a failed trial holding the compiler's message.
    server = FakeEndpoint("broken_source")
    db, summary, _ = run_case(directory, "broken_source", server.port, max_calls=3, kernel_sources=1)
    rows = query(db, "SELECT proposer, rationale, outcome, seq FROM decisions WHERE run = ? AND "
                     "action = 'propose_source'", (summary["run_id"],))
    check(len(rows) == 1, f"broken_source: {len(rows)} propose_source decisions")
    proposer, rationale, outcome, seq = rows[0]
    check(proposer == "rules" and "does not build: compilation failed" in rationale,
          f"broken_source: {proposer} {rationale}")
    trials = query(db, "SELECT id, status, error FROM trials WHERE run = ? AND decision_seq = ?",
                   (summary["run_id"], seq))
    check(len(trials) == 1 and trials[0][1] == "failed", f"broken_source: trials {trials}")
    check("undeclared_in_llm_source" in trials[0][2] and "error" in trials[0][2],
          f"broken_source: the trial lacks the compiler's message: {trials[0][2]!r}")
    check(outcome == f"rejected; recorded as failed trial {trials[0][0]}", f"broken_source: outcome {outcome!r}")
    reasons = [reason for accepted, reason, *_ in calls(db, summary["run_id"]) if not accepted]
    check(any("does not build" in r for r in reasons), f"broken_source: llm_calls reasons {reasons}")
    server.stop()

    # Generated code runs sandboxed: a kernel that runs a shell command when loaded changes nothing outside
    # (the file system is read-only to it), and is measured like any other.
    server = FakeEndpoint("hostile_source")
    db, summary, _ = run_case(directory, "hostile_source", server.port, max_calls=3, kernel_sources=1)
    rows = query(db, "SELECT evidence, seq FROM decisions WHERE run = ? AND action = 'propose_source'",
                 (summary["run_id"],))
    check(len(rows) == 1, f"hostile_source: {len(rows)} propose_source decisions")
    kernel = json.loads(rows[0][0])["kernel"]
    trials = query(db, "SELECT status FROM trials WHERE run = ? AND variant = ?", (summary["run_id"], kernel["name"]))
    check(trials and trials[0][0] == "ok", f"hostile_source: trial {trials}")
    check(not os.path.exists(HOSTILE_MARKER), "a generated kernel wrote outside the sandbox")
    server.stop()

    # Where no sandbox can be made (no bwrap on the PATH), generated sources are refused before any work,
    # unless the goal opts in.
    goal = write_goal(directory, "nosandbox.yaml", goal_text(closed_port(), kernel_sources=1))
    db = os.path.join(directory, "nosandbox.db")
    proc = run(["run", goal], db, env_extra={"PATH": "/nonexistent"})
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 2 and len(lines) == 1 and "llm.kernel_sources" in lines[0] and
          "bubblewrap" in lines[0] and "allow_unsandboxed_sources: true" in lines[0],
          f"no sandbox: exit {proc.returncode}, {proc.stderr!r}")
    check(not os.path.exists(db) or not query(db, "SELECT id FROM runs"), "a refused goal started a run")

    print("OK")


if __name__ == "__main__":
    main()
