"""The sandbox for generated kernel sources, attacked from inside (run as root, from a pty, as found).

A fake LLM endpoint answers with the current best's exported source plus a static initializer that
probes the sandbox when the kernel worker loads it, prints what it got on one line and aborts. The
probe tries, each of which must fail:
  - remounting / read-write and creating a file on the host (capabilities, user namespace, seccomp);
  - pushing keystrokes into the controlling terminal with ioctl(TIOCSTI) (autotune runs on a pty
    here: without a session of its own the sandbox would own it);
  - connecting to a TCP server this test listens with on 127.0.0.1 (no network);
  - forking 300 sleeping children (a process limit);
  - reading OPENAI_API_KEY and PGPASSWORD from its environment (a clean environment), and a file
    holding a secret (what comes back is redacted): no secret may reach the database.
A second answer is an include bomb (a header that includes itself twice): its compile must stop at the
goal's timeout. A third includes /dev/zero, whose compile grows without end: the compiler must stop at the
sandbox's 4 GiB of address space (this test watches its peak from outside), long before the timeout,
with the compiler's "out of memory" in the decision, and the run goes on. A fourth, a sound kernel, runs
with symbolic links planted in the temporary folder at the names the scratch folder once had
(`autotune-sandbox-<pid>`, for the next few thousand pids): the kernel must still be measured, the links
and what they point to left alone. Scratch files must not outlive the run."""
import json
import os
import pty
import socket
import subprocess
import sys
import threading
import time

from test_llm import KEY, KEY_ENV, MODEL, FakeEndpoint
from loop_support import BIN, check, fail, query, tempdir, write_goal

OPENAI = "sk-openai-7d3b1e0c9a"
PGPASS = "pg-secret-4c2a9f81e6"

PROBE = r"""
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
namespace {
int sandbox_probe() {
  const int mounted = ::mount("none", "/", nullptr, MS_REMOUNT | MS_BIND, nullptr) == 0 ? 0 : errno;
  const int created = ::open("@MARKER@", O_CREAT | O_WRONLY, 0644);
  const int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY);
  int pushed = -1;
  if (tty >= 0) {
    for (const char* c = "#"; *c != 0; ++c) pushed = ::ioctl(tty, TIOCSTI, c) == 0 ? 0 : errno;
  }
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(@PORT@);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int connected = ::connect(s, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 ? 0 : errno;
  int forked = 0;
  for (int i = 0; i < 300; ++i) {
    const pid_t child = ::fork();
    if (child == 0) { ::sleep(20); ::_exit(0); }
    if (child < 0) break;
    ++forked;
  }
  char secret[64] = "-";
  if (FILE* f = std::fopen("@SECRET_FILE@", "r")) { if (std::fscanf(f, "%63s", secret) != 1) secret[0] = 0; std::fclose(f); }
  const char* openai = std::getenv("OPENAI_API_KEY");
  const char* pg = std::getenv("PGPASSWORD");
  std::fprintf(stderr, "PROBE mount=%d create=%d tty=%d tiocsti=%d connect=%d forked=%d openai=%s pg=%s file=%s END\n",
               mounted, created >= 0 ? 1 : 0, tty >= 0 ? 1 : 0, pushed, connected, forked,
               openai ? openai : "-", pg ? pg : "-", secret);
  std::abort();
}
const int probed = sandbox_probe();
}  // namespace
"""

# Included from the generated source: a header that includes itself twice, 2^40 times over.
BOMB_HEADER = "#if __INCLUDE_LEVEL__ < 40\n#include __FILE__\n#include __FILE__\n#endif\n"


def goal_text(port, timeout_s):
    return f"""name: sandbox-e2e
kernel: {{family: gemm, shape: {{M: 256, N: 512, K: 512}}, dtype: bf16}}
objective: latency
goal: {{improvement: 0.95}}
max_iterations: 2
budget: {{evaluations: 6, wall_time_s: 300}}
search: {{strategy: random, batch_size: 2}}
start: {{variant: tiled}}
parallel: 1
timeout_s: {timeout_s}
seed: 5
llm: {{endpoint: "http://127.0.0.1:{port}/v1", model: {MODEL}, api_key_env: {KEY_ENV}, timeout_s: 5, max_calls: 3, kernel_sources: 1}}
"""


def run_on_pty(args, env, timeout):
    """autotune with a pty as its controlling terminal (stdin), stdout and stderr captured."""
    master, slave = pty.openpty()

    def controlling_terminal():
        os.setsid()
        import fcntl
        import termios
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        proc = subprocess.run([BIN] + args, stdin=slave, capture_output=True, text=True, timeout=timeout, env=env,
                              preexec_fn=controlling_terminal)
    finally:
        os.close(slave)
        os.close(master)
    return proc


def main():
    if os.geteuid() != 0:
        print("SKIP: the sandbox attacks are checked as root, as they were found")
        return
    holder = tempdir()
    directory = holder.name
    scratch = os.path.join(directory, "tmp")
    os.makedirs(scratch)
    marker = os.path.join(directory, "written-from-the-sandbox")
    secret_file = os.path.join(directory, "dotfile")
    with open(secret_file, "w") as f:
        f.write(PGPASS + "\n")  # as in a ~/.pgpass the sandbox can read
    os.chmod(directory, 0o755)

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    accepted = []
    stop = threading.Event()

    def accept_loop():
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
                accepted.append(connection)
            except OSError:
                pass

    threading.Thread(target=accept_loop, daemon=True).start()

    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    env.update({KEY_ENV: KEY, "OPENAI_API_KEY": OPENAI, "PGPASSWORD": PGPASS, "TMPDIR": scratch,
                "AUTOTUNE_CACHE_DIR": os.path.join(directory, "cache"),
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})

    def run_goal(name, suffix, timeout_s):
        endpoint = FakeEndpoint("source", suffix)
        try:
            goal = write_goal(directory, f"{name}.yaml", goal_text(endpoint.port, timeout_s))
            db = os.path.join(directory, f"{name}.db")
            started = time.monotonic()
            proc = run_on_pty(["run", goal, "--json", "--db", db], env, timeout=600)
            elapsed = time.monotonic() - started
        finally:
            endpoint.stop()
        if proc.returncode != 0:
            fail(f"{name}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        summary = json.loads(proc.stdout)
        return db, summary, proc, elapsed

    probe = (PROBE.replace("@MARKER@", marker).replace("@PORT@", str(listener.getsockname()[1]))
             .replace("@SECRET_FILE@", secret_file))
    db, summary, proc, _ = run_goal("probe", probe, 120)
    rows = query(db, "SELECT rationale, evidence FROM decisions WHERE run = ? AND action = 'propose_source'",
                 (summary["run_id"],))
    check(len(rows) == 1, f"probe: {len(rows)} propose_source decisions")
    rationale = rows[0][0]
    check("PROBE " in rationale and " END" in rationale, f"probe: its report is not in the decision: {rationale!r}")
    report = dict(item.split("=", 1) for item in rationale[rationale.index("PROBE ") + 6:rationale.index(" END")].split())
    check(report["mount"] != "0" and report["create"] == "0" and not os.path.exists(marker),
          f"probe: the sandbox remounted / and wrote on the host: {report}")
    check(report["tiocsti"] != "0", f"probe: the sandbox pushed keystrokes into the terminal: {report}")
    check(report["connect"] != "0", f"probe: the sandbox connected to 127.0.0.1: {report}")
    stop.set()
    check(not accepted, "probe: the test's server accepted a connection from the sandbox")
    check(int(report["forked"]) < 100, f"probe: the sandbox forked {report['forked']} of 300 children")
    check(report["openai"] == "-" and report["pg"] == "-", f"probe: the environment reached the sandbox: {report}")
    check(report["file"] == "<redacted>", f"probe: a secret read from a file came back unredacted: {report}")
    for path in (db, db + "-wal"):
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            for secret in (OPENAI, PGPASS, KEY):
                check(secret.encode() not in data, f"probe: a secret is in {os.path.basename(path)}")
    for secret in (OPENAI, PGPASS):
        check(secret not in proc.stdout and secret not in proc.stderr, "probe: a secret was printed")
    left = [name for name in os.listdir(scratch)]
    check(not left, f"probe: scratch files outlived the run: {left}")

    # The include bomb: stopped at the goal's timeout (timeout_s: 20), not minutes later.
    bomb = os.path.join(directory, "bomb.h")
    with open(bomb, "w") as f:
        f.write(BOMB_HEADER)
    db, summary, proc, elapsed = run_goal("bomb", f'\n#include "{bomb}"\n', 20)
    rows = query(db, "SELECT rationale FROM decisions WHERE run = ? AND action = 'propose_source'",
                 (summary["run_id"],))
    check(len(rows) == 1 and "timed out after 20 s" in rows[0][0], f"bomb: {rows}")
    check(elapsed < 120, f"bomb: the run took {elapsed:.0f} s against a 20 s compile timeout")
    left = [name for name in os.listdir(scratch)]
    check(not left, f"bomb: scratch files outlived the run: {left}")

    check_memory_bomb(directory, scratch, run_goal)
    check_planted_links(directory, scratch, run_goal)
    print("OK")


def peak_address_space(directory, stop, peaks):
    """Polls the compilers of this test (their command lines name `directory`) for their VmPeak, in kB."""
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                if b"cc1plus" not in cmdline or directory.encode() not in cmdline:
                    continue
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmPeak:"):
                            peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]))
            except OSError:
                pass
        time.sleep(0.02)


def check_memory_bomb(directory, scratch, run_goal):
    """A generated source that includes /dev/zero: the preprocessor reads it into ever larger buffers."""
    stop = threading.Event()
    peaks = {}
    watcher = threading.Thread(target=peak_address_space, args=(directory, stop, peaks), daemon=True)
    watcher.start()
    try:
        db, summary, proc, elapsed = run_goal("memory", '\n#include "/dev/zero"\n', 240)
    finally:
        stop.set()
        watcher.join()
    rows = query(db, "SELECT rationale, seq FROM decisions WHERE run = ? AND action = 'propose_source'",
                 (summary["run_id"],))
    check(len(rows) == 1 and "out of memory" in rows[0][0] and "timed out" not in rows[0][0],
          f"memory: the compile did not stop for want of memory: {rows}")
    trials = query(db, "SELECT status, error FROM trials WHERE run = ? AND decision_seq = ?",
                   (summary["run_id"], rows[0][1]))
    check(len(trials) == 1 and trials[0][0] == "failed" and "out of memory" in trials[0][1],
          f"memory: the source's trial is not a failure saying so: {trials}")
    check(peaks, "memory: the compiler was never seen")
    peak = max(peaks.values())
    check(peak <= 4 << 20, f"memory: the compiler reached {peak / (1 << 20):.2f} GiB of address space (4 expected)")
    check(elapsed < 200, f"memory: the run took {elapsed:.0f} s against a 240 s compile timeout")
    status, later = query(db, "SELECT status, (SELECT COUNT(*) FROM trials WHERE run = runs.id AND decision_seq > ?) "
                              "FROM runs WHERE id = ?", (rows[0][1], summary["run_id"]))[0]
    check(status == "completed", f"memory: the run did not go on: {status}, {later} trials after the source")
    left = [name for name in os.listdir(scratch)]
    check(not left, f"memory: scratch files outlived the run: {left}")


def check_planted_links(directory, scratch, run_goal):
    """Another local user's links at the scratch folder's old, predictable names do not break a kernel."""
    decoy = os.path.join(directory, "decoy")
    with open(decoy, "w") as f:
        f.write("not a folder\n")
    with open("/proc/sys/kernel/ns_last_pid") as f:
        last = int(f.read())
    planted = set()
    for pid in range(last + 1, last + 5000):
        for name in (f"autotune-sandbox-{pid}", f"autotune-sandbox-{pid}-0"):
            os.symlink(decoy, os.path.join(scratch, name))
            planted.add(name)
    os.symlink(os.path.join(directory, "nowhere"), os.path.join(scratch, "autotune-sandbox-XXXXXX"))
    planted.add("autotune-sandbox-XXXXXX")
    db, summary, proc, _ = run_goal("links", "", 120)
    rows = query(db, "SELECT evidence, seq FROM decisions WHERE run = ? AND action = 'propose_source'",
                 (summary["run_id"],))
    check(len(rows) == 1, f"links: {len(rows)} propose_source decisions")
    kernel = json.loads(rows[0][0]).get("kernel")
    check(kernel, f"links: the generated source was rejected: {rows[0][0][:2000]}")
    trials = query(db, "SELECT status, error FROM trials WHERE run = ? AND variant = ? AND decision_seq = ?",
                   (summary["run_id"], kernel["name"], rows[0][1]))
    check(len(trials) == 1 and trials[0][0] == "ok", f"links: the generated kernel was not measured: {trials}")
    with open(decoy) as f:
        check(f.read() == "not a folder\n", "links: the file a planted link points to was changed")
    left = set(os.listdir(scratch))
    check(left == planted, f"links: scratch files outlived the run, or planted links went: {sorted(left - planted)[:5]} "
                           f"{len(planted - left)} links gone")
    for name in planted:
        os.unlink(os.path.join(scratch, name))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
