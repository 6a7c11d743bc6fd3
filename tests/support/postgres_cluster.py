#!/usr/bin/env python3
"""A throwaway PostgreSQL cluster for the tests: a real server, no mocks.

    postgres_cluster.py start STATE.json   initdb in a new temporary folder, start the server on a
                                           Unix socket there (no TCP port), write STATE.json
    postgres_cluster.py stop STATE.json    stop the server, remove the folder and STATE.json
    postgres_cluster.py url STATE.json [DATABASE]
                                           print the URL of DATABASE (default: postgres)

STATE.json holds what tests need: "url" (a libpq URL with a %s for the database name), "bin" (the
server's programs), "data" and "socket" folders, and "run_as" (the unprivileged user the server runs
as when the tests run as root, since PostgreSQL refuses to run as root). Tests that restart or stop
the server use the same programs through postgres_cluster.pg_ctl().
"""
import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

USER = "autotune"


def server_bin():
    """The newest installed server's bin folder (Debian puts them under /usr/lib/postgresql/N/bin)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda path: int(path.split("/")[4]) if path.split("/")[4].isdigit() else 0)
    if candidates:
        return os.path.dirname(candidates[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(initdb)
    sys.exit("postgres_cluster: no PostgreSQL server found (scripts/setup.sh --all installs Debian's postgresql)")


def run_as_prefix(state):
    return ["runuser", "-u", state["run_as"], "--"] if state.get("run_as") else []


def pg_ctl(state, *arguments, check=True):
    command = run_as_prefix(state) + [os.path.join(state["bin"], "pg_ctl"), "-D", state["data"], "-s", *arguments]
    return subprocess.run(command, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def start_server(state):
    options = f"-k {state['socket']} -c listen_addresses='' -c fsync=off -c max_connections=200"
    pg_ctl(state, "-w", "-t", "60", "-l", os.path.join(state["root"], "server.log"), "-o", options, "start")


def stop_server(state, mode="fast"):
    pg_ctl(state, "-w", "-m", mode, "stop", check=False)


def start(state_file):
    root = tempfile.mkdtemp(prefix="autotune-pg-")
    os.chmod(root, 0o755)
    state = {"root": root, "data": os.path.join(root, "data"), "socket": root, "bin": server_bin(), "run_as": None}
    if os.geteuid() == 0:
        state["run_as"] = "postgres" if _user_exists("postgres") else "nobody"
        entry = pwd.getpwnam(state["run_as"])
        os.chown(root, entry.pw_uid, entry.pw_gid)
    subprocess.run(run_as_prefix(state) + [os.path.join(state["bin"], "initdb"), "-D", state["data"], "-U", USER,
                                           "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    start_server(state)
    state["url"] = f"postgresql://{USER}@/%s?host={root}"
    with open(state_file, "w") as out:
        json.dump(state, out, indent=1)
    print(f"postgres_cluster: server up, socket in {root}")


def _user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def stop(state_file):
    if not os.path.exists(state_file):
        return
    with open(state_file) as f:
        state = json.load(f)
    stop_server(state, "immediate")
    shutil.rmtree(state["root"], ignore_errors=True)
    os.remove(state_file)
    print("postgres_cluster: server stopped and removed")


def load(state_file):
    with open(state_file) as f:
        return json.load(f)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("start", "stop", "url"):
        sys.exit(__doc__)
    command, state_file = sys.argv[1], sys.argv[2]
    if command == "start":
        stop(state_file)  # a cluster left behind by an interrupted test run
        start(state_file)
    elif command == "stop":
        stop(state_file)
    else:
        database = sys.argv[3] if len(sys.argv) > 3 else "postgres"
        print(load(state_file)["url"] % database)


if __name__ == "__main__":
    main()
