"""report, trace and serve from the command line: the files they write, and bad input as one line with exit 2
(an unknown run or trial, a port in use, a file that is not a database). The pages themselves are checked in
a real browser by tests/browser/report.test.mjs."""
import json
import os
import re
import resource
import shutil
import socket
import sqlite3
import subprocess
import time

from loop_support import BIN, check, fail, goal_path, query, run, run_json, tempdir, write_goal


def page_data(html):
    """The run documents a report page embeds (report/report_data.hpp)."""
    text = re.search(r'<script type="application/json" id="autotune-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(text)


def check_mfu_goal(tmp, db):
    """An MFU goal is named in the page's header data (it read `goal -`), and its bound drawn as the
    latency at which the baseline's work reaches it."""
    goal = write_goal(tmp, "mfu.yaml", """
name: mfu-goal
kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}
objective: mfu
goal: {mfu_percent: 60}
max_iterations: 1
budget: {evaluations: 4}
""")
    run_id = str(run_json(["run", goal], db)["run_id"])
    page = os.path.join(tmp, "mfu.html")
    check(run(["report", run_id, "--no-timelines", "-o", page], db).returncode == 0, "report of the MFU run")
    doc = page_data(open(page).read())["runs"][0]
    check(doc.get("goal") == "MFU >= 60%", f"the MFU goal reads {doc.get('goal')!r}")
    baseline = query(db, "SELECT metrics FROM trials WHERE id = ?", (doc["baseline"]["trial"],))[0][0]
    metrics = json.loads(baseline)
    expected = metrics["latency_s"] * metrics["mfu_percent"] / 60
    check(abs(doc.get("goal_latency_s", 0) - expected) <= 1e-9 * expected,
          f"the MFU goal's line at {doc.get('goal_latency_s')} s, expected {expected}")


DEVICE = """import json, sys
x = int(sys.argv[1])
# A device that reports its own MFU (counters), which does not follow the latency here.
print(json.dumps({"latency_s": {0: 1.0, 1: 0.6, 2: 0.8, 3: 0.9, 4: 0.5}[x] * 1e-3,
                  "mfu_percent": {0: 30.0, 1: 35.0, 2: 60.0, 3: 45.0, 4: 32.0}[x]}))
"""


def check_mfu_best_so_far(tmp, db):
    """The best-so-far line of an MFU goal follows the MFU, as the loop does, not the latency."""
    with open(os.path.join(tmp, "device.py"), "w") as f:
        f.write(DEVICE)
    goal = write_goal(tmp, "mfu-device.yaml", """
name: mfu-device
target: {kind: command, argv: [python3, device.py, "{x}"]}
objective: mfu
goal: {mfu_percent: 99}
search: {strategy: grid, space: {x: [0, 1, 2, 3, 4]}}
start: {params: {x: 0}}
max_iterations: 2
budget: {evaluations: 5}
""")
    result = run_json(["run", goal], db)
    run_id = str(result["run_id"])
    trials = {row[0]: json.loads(row[1]) for row in
              query(db, "SELECT id, metrics FROM trials WHERE run = ? AND status = 'ok'", (run_id,))}
    fastest = min(trials, key=lambda t: trials[t]["latency_s"])
    check(fastest != result["best"]["trial"], "the scenario needs the loop's best not to be the fastest")
    page = os.path.join(tmp, "mfu-device.html")
    check(run(["report", run_id, "--no-timelines", "-o", page], db).returncode == 0, "report of the MFU run")
    doc = page_data(open(page).read())["runs"][0]
    line = [b[2] for b in doc["best_so_far"]]
    check(line and line[-1] == result["best"]["trial"] == doc["best"]["trial"],
          f"the best-so-far line ends at {line}, the loop's best is trial {result['best']['trial']}")
    mfu = [trials[t]["mfu_percent"] for t in line]
    check(mfu == sorted(mfu) and len(set(mfu)) == len(mfu), f"the line's MFU only rises: {mfu}")
    check(all(b[1] == trials[b[2]]["latency_s"] for b in doc["best_so_far"]), "the line is drawn at the latency")


def start_server(db, *args, limits=None):
    """`autotune serve` on a free port: the process, its port, and what it printed before the URL."""
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    preexec = (lambda: [resource.setrlimit(k, v) for k, v in limits]) if limits else None
    server = subprocess.Popen([BIN, "serve", "--db", db, "--port", "0", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, preexec_fn=preexec)
    line = server.stdout.readline()
    port = re.search(r"http://\S+:(\d+)/", line)
    check(port, f"serve printed {line!r}")
    return server, int(port.group(1)), line


def exchange(port, raw, wait=0.5):
    """Sends raw bytes on one connection and returns everything answered within `wait` seconds."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(raw)
        s.settimeout(wait)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except socket.timeout:
            pass
        return out.decode("utf-8", "replace")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_serve_network(db):
    """The dashboard on the wire: HEAD has no body (the next answer on the connection stays in step), a
    foreign Host is refused (DNS rebinding), connections are bounded and idle ones closed, and running out
    of descriptors makes the accept loop wait, not spin."""
    server, port, _ = start_server(db, "--max-connections", "3", "--idle-timeout", "2")
    try:
        answer = exchange(port, b"HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n"
                                b"GET /api/run/99999999999999999999 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        first, _, rest = answer.partition("\r\n\r\n")
        check(first.startswith("HTTP/1.1 200") and re.search(r"Content-Length: [1-9]", first, re.I), answer[:300])
        check(rest.startswith("HTTP/1.1 404") and rest.endswith("run 99999999999999999999 not found in " + db + "\n"),
              f"after a HEAD the next answer reads {rest[:300]!r}")
        # A malformed or oversized request gets a status before the connection closes, not silence.
        for raw, status in ((b"GARBAGE\r\n\r\n", "400"), (b"GET / HTTP/9.9\r\nHost: localhost\r\n\r\n", "400"),
                            (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", "431"),
                            (b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n"
                             + b"x" * 100000, "413")):
            answered = exchange(port, raw)
            check(answered.startswith("HTTP/1.1 " + status), f"{raw[:30]!r}: answered {answered[:200]!r}")
        # RFC 9112: an HTTP/1.1 request without a Host, or one with two, is a 400; HTTP/1.0 may go without.
        for raw, status in ((b"GET / HTTP/1.1\r\n\r\n", "400"),
                            (b"GET / HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n", "400"),
                            (b"GET /api/runs HTTP/1.0\r\n\r\n", "200")):
            answered = exchange(port, raw)
            check(answered.startswith("HTTP/1.") and answered[9:12] == status, f"{raw!r}: {answered[:200]!r}")
        # A method it does not serve: 405 with the ones it does.
        answered = exchange(port, b"DELETE /api/runs HTTP/1.1\r\nHost: localhost\r\n\r\n")
        check(answered.startswith("HTTP/1.1 405") and re.search(r"\r\nAllow: GET, HEAD\r\n", answered, re.I),
              f"DELETE: {answered[:300]!r}")
        refused = exchange(port, b"GET /api/runs HTTP/1.1\r\nHost: attacker.example:%d\r\n\r\n" % port)
        check(refused.startswith("HTTP/1.1 403") and "--allow-host" in refused, refused[:300])
        allowed_server, allowed_port, _ = start_server(db, "--allow-host", "Tune.Example.org")
        try:
            ok = exchange(allowed_port, b"GET /api/runs HTTP/1.1\r\nHost: tune.example.org\r\n\r\n")
            check(ok.startswith("HTTP/1.1 200"), ok[:300])
        finally:
            allowed_server.kill()

        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        time.sleep(0.3)
        busy = exchange(port, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        check(busy.startswith("HTTP/1.1 503"), f"a connection beyond --max-connections: {busy[:200]!r}")
        start = time.monotonic()
        idle[0].settimeout(10)
        check(idle[0].recv(1) == b"" and time.monotonic() - start < 5, "an idle connection was not closed")
        for s in idle:
            s.close()
        time.sleep(0.3)
        check(exchange(port, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").startswith("HTTP/1.1 200"),
              "the server does not answer once the idle connections are gone")
    finally:
        server.kill()
        server.wait()

    # Out of descriptors: 100 connections to a server allowed 40 descriptors.
    server, port, _ = start_server(db, "--idle-timeout", "3", limits=[(resource.RLIMIT_NOFILE, (40, 40))])
    clients = []
    try:
        for _ in range(100):
            clients.append(socket.create_connection(("127.0.0.1", port)))
        time.sleep(0.5)
        before = cpu_seconds(server.pid)
        time.sleep(2)
        spent = cpu_seconds(server.pid) - before
        check(spent < 0.5, f"the server spent {spent:.2f} s of CPU in 2 s with its descriptors exhausted")
        for c in clients:
            c.close()
        clients = []
        time.sleep(4)  # the idle timeout frees the server's side
        check(exchange(port, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").startswith("HTTP/1.1 200"),
              "the server does not answer after running out of descriptors")
        check(server.poll() is None, "the server died")
    finally:
        for c in clients:
            c.close()
        server.kill()
        server.wait()

    # Beyond loopback: a warning (no authentication) and a URL that can be typed, also for IPv6.
    for address, url in (("0.0.0.0", "http://0.0.0.0:"), ("::", "http://[::]:")):
        server, port, line = start_server(db, "--address", address)
        try:
            check(url in line, f"--address {address} printed {line!r}")
            server.kill()
            err = server.stderr.read()
            check("warning" in err and "no authentication" in err and "reverse proxy" in err,
                  f"--address {address} warned {err!r}")
        finally:
            server.kill()
            server.wait()
    server, port, _ = start_server(db)
    server.kill()
    check(server.stderr.read() == "", "a warning on loopback")
    server.wait()


def tasks_of(uid):
    """Processes and threads of user `uid` now: RLIMIT_NPROC counts them all."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    return count


def check_serve_unreadable(db, tmp):
    """A stored value the reader cannot use is a 500 of one line, not a 404: the run is there."""
    broken = os.path.join(tmp, "broken.db")
    with sqlite3.connect(db) as source, sqlite3.connect(broken) as copy:
        source.backup(copy)  # the write-ahead log's pages too, which a file copy would miss
        copy.execute("UPDATE trials SET params = '{not json' WHERE run = 1")
    server, port, _ = start_server(broken)
    try:
        answer = exchange(port, b"GET /api/run/1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        check(answer.startswith("HTTP/1.1 500") and "invalid JSON in column params" in answer, answer[:300])
        missing = exchange(port, b"GET /api/run/99999 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        check(missing.startswith("HTTP/1.1 404"), missing[:300])
    finally:
        server.kill()


def check_serve_processes(db, tmp):
    """Out of processes, as found: `ulimit -u 100` and 184 idle connections used to take the server down
    ("Resource temporarily unavailable"). Root is exempt from RLIMIT_NPROC, so as root the server runs as
    nobody (setpriv), on a copy of the database nobody owns; the limit is 100 above what the user runs now."""
    import sqlite3
    prefix, uid = [], os.getuid()
    if uid == 0:
        uid = 65534
        prefix = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        probe = subprocess.run(prefix + ["true"], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"SKIP serve under a process limit: setpriv cannot become user {uid}: {probe.stderr.strip()}")
            return
    os.chmod(tmp, 0o755)  # the way to the copy
    folder = os.path.join(tmp, "nobody")
    os.makedirs(folder)
    copy = os.path.join(folder, "runs.db")
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    for path in (folder, copy):
        os.chown(path, uid, uid)
    limit = tasks_of(uid) + 100
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    # Every connection accepted (no 503 to lean on): a fixed set of threads must serve them all.
    server = subprocess.Popen(prefix + [BIN, "serve", "--db", copy, "--port", "0", "--max-connections", "1000"],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=folder,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit)))
    clients = []
    try:
        port = re.search(r"http://\S+:(\d+)/", server.stdout.readline())
        if not port:
            server.kill()
            fail("serve under a process limit printed no URL: " + server.stderr.read()[-1000:])
        port = int(port.group(1))
        for _ in range(184):
            clients.append(socket.create_connection(("127.0.0.1", port)))
        time.sleep(1)
        if server.poll() is not None:
            fail(f"the server died with 184 idle connections under a process limit of {limit}: "
                 + server.stderr.read()[-1000:])
        busy = exchange(port, b"GET /api/runs HTTP/1.1\r\nHost: localhost\r\n\r\n")
        check(busy.startswith("HTTP/1.1 200"), f"no answer with 184 idle connections: {busy[:200]!r}")
        for c in clients:
            c.close()
        clients = []
        time.sleep(0.5)
        ok = exchange(port, b"GET /api/runs HTTP/1.1\r\nHost: localhost\r\n\r\n")
        check(ok.startswith("HTTP/1.1 200"), f"the server does not answer under a process limit: {ok[:200]!r}")
        check(server.poll() is None, "the server died")
    finally:
        for c in clients:
            c.close()
        server.kill()
        server.wait()


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        result = run_json(["run", goal_path("quickstart.yaml")], db)
        run_id = str(result["run_id"])

        page = os.path.join(tmp, "report.html")
        proc = run(["report", run_id, "-o", page], db)
        check(proc.returncode == 0 and "needs no network" in proc.stdout, proc.stdout + proc.stderr)
        html = open(page).read()
        check("http://" not in html.split("<script>")[0] and "<script src" not in html, "the page loads something")
        check(html.count('"trial":') >= result["evaluations"], "the page lacks the run's trials")
        quick = os.path.join(tmp, "quick.html")
        check(run(["report", run_id, "--no-timelines", "-o", quick], db).returncode == 0, "--no-timelines")
        check('"timelines"' not in open(quick).read(), "--no-timelines still re-simulated")

        data = page_data(html)
        check(data["runs"][0].get("goal") == "20% lower latency than the baseline",
              f"the latency goal reads {data['runs'][0].get('goal')!r}")
        check_mfu_goal(tmp, db)
        check_mfu_best_so_far(tmp, db)

        trace = os.path.join(tmp, "trace.json")
        best = str(result["best"]["trial"])
        proc = run(["trace", run_id, best, "-o", trace], db)
        check(proc.returncode == 0, proc.stderr)
        events = json.load(open(trace))["traceEvents"]
        check(len(events) > 10 and any(e.get("ph") == "X" for e in events), f"{len(events)} trace events")

        # -o never replaces the database the command reads, by whatever name (its runs would be lost).
        with open(db, "rb") as f:
            committed = f.read()
        for args in (["report", run_id, "-o", db], ["trace", run_id, best, "-o", db],
                     ["export", run_id, "-o", db + "-wal"], ["export", run_id, "--nki", "-o", db]):
            proc = run(args, db)
            check(proc.returncode == 2 and "database it reads" in proc.stderr, f"{args}: {proc.returncode} {proc.stderr!r}")
        with open(db, "rb") as f:
            check(f.read() == committed, "an -o refused still changed the database")

        for args, expected in ((["report", "999"], "run 999 not found"),
                               (["trace", run_id, "99999"], "trial 99999 not found"),
                               (["serve", "--port", "70000"], "--port 70000 is out of range")):
            proc = run(args, db)
            check(proc.returncode == 2 and expected in proc.stderr and proc.stderr.count("\n") == 1,
                  f"{args}: {proc.returncode} {proc.stderr!r}")
        not_db = os.path.join(tmp, "notes.txt")
        open(not_db, "w").write("not a database\n")
        proc = run(["serve", "--port", "0"], not_db)
        check(proc.returncode == 2 and "not an SQLite database" in proc.stderr, proc.stderr)

        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        server = subprocess.Popen([BIN, "serve", "--db", db, "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
        try:
            line = server.stdout.readline()
            check("serving" in line and "http://127.0.0.1:" in line, f"serve printed {line!r}")
            port = re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1)
            proc = run(["serve", "--port", port], db)
            check(proc.returncode == 2 and "choose another --port" in proc.stderr, proc.stderr)
        finally:
            server.kill()
        check_serve_network(db)
        check_serve_processes(db, tmp)
        check_serve_unreadable(db, tmp)
    print("ok")


if __name__ == "__main__":
    main()
