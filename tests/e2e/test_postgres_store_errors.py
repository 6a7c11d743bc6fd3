"""A PostgreSQL database autotune did not write, and secrets in database URLs, on the throwaway cluster of
tests/support/postgres_cluster.py: a schema version of -1, one stored as text, a version table without its
column, or a table without a column autotune writes is one line and exit 2, with no SQL, and so is a role
that may not read autotune's tables (saying so); a URL's password never appears in a message, and a
worker's command line no longer shows it once it runs."""
import functools
import os
import subprocess
import sys
import time

from loop_support import BIN, check, one_error_line, psql as cluster_psql, run

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import postgres_cluster  # noqa: E402

STATE = postgres_cluster.load(os.environ["AUTOTUNE_TEST_POSTGRES"])
psql = functools.partial(cluster_psql, STATE)


def new_database(name):
    psql("postgres", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    psql("postgres", f"CREATE DATABASE {name}")
    url = STATE["url"] % name
    check(run(["runs"], url).returncode == 0, "a new database gets its schema")
    return url


def no_sql(proc):
    check("SELECT" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr)


def main():
    for name, change, needle in (
            ("pg_version_negative", "UPDATE autotune_schema SET version = -1", "schema version '-1'"),
            ("pg_version_text", "ALTER TABLE autotune_schema ALTER COLUMN version TYPE text; "
                                "UPDATE autotune_schema SET version = 'five'", "schema version 'five'"),
            ("pg_version_column", "ALTER TABLE autotune_schema DROP COLUMN version", "no column 'version'"),
            ("pg_runs_column", "DROP VIEW IF EXISTS run_summary CASCADE; ALTER TABLE runs DROP COLUMN seed CASCADE",
             "does not have the tables autotune writes")):
        url = new_database(name)
        psql(name, change)
        proc = run(["runs"], url)
        one_error_line(proc, needle)
        no_sql(proc)

    # A role that may not read autotune's tables is told so, not that the database is another program's.
    url = new_database("pg_no_privilege")
    psql("postgres", "DROP ROLE IF EXISTS autotune_nobody; CREATE ROLE autotune_nobody LOGIN")
    proc = run(["runs"], url.replace("postgresql://autotune@", "postgresql://autotune_nobody@"))
    one_error_line(proc, "permission denied for table autotune_schema", "a role that may create, read and write")
    check("not an autotune database" not in proc.stderr, proc.stderr)
    no_sql(proc)

    # A password never appears in a message, as written or percent-decoded.
    for url in ("postgresql://u:TOPSECRET@[::1/db", "postgresql://u:TOP%53ECRET@/nodb?host=/nonexistent",
                "postgresql://u@/nodb?host=/nonexistent&password=TOPSECRET"):
        proc = run(["runs"], url)
        check(proc.returncode == 2 and "TOPSECRET" not in proc.stderr and "TOP%53ECRET" not in proc.stderr,
              f"{url}: {proc.stderr!r}")

    # A worker's --db: the password is gone from /proc/PID/cmdline once it runs (the cluster trusts its
    # socket, so the password is not checked).
    url = new_database("pg_worker_secret")
    secret_url = url.replace("postgresql://autotune@", "postgresql://autotune:TOPSECRET@") + "&password=TOPSECRET"
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    worker = subprocess.Popen([BIN, "worker", "--db", secret_url, "--idle-exit", "20"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(1.5)
        check(worker.poll() is None, f"the worker ended: {worker.stderr.read() if worker.poll() is not None else ''}")
        cmdline = open(f"/proc/{worker.pid}/cmdline", "rb").read().decode()
        check("TOPSECRET" not in cmdline and "--db" in cmdline, f"the worker's command line: {cmdline!r}")
    finally:
        worker.kill()
        worker.wait()
    print("ok")


if __name__ == "__main__":
    main()
