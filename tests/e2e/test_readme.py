"""The README's first session works as written: every command of its block runs, in order, on a fresh
database, from a fresh folder holding the build and the configs, and succeeds; then docs/store.md's sqlite3
examples run on that database."""
import os
import re
import shlex
import sqlite3
import subprocess

from loop_support import BIN, SOURCE, check, tempdir


def session_commands():
    text = open(os.path.join(SOURCE, "README.md")).read()
    section = text[text.index("## A first session"):]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    commands = []
    pending = ""
    for line in block.splitlines():
        line = line.split("#", 1)[0].rstrip()  # the comments explain; they are not part of the command
        if line.endswith("\\"):  # continued on the next line
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            commands.append(line)
    return commands


def check_store_queries(database):
    """docs/store.md's sqlite3 examples run on the session's database; those about run 1 find rows."""
    text = open(os.path.join(SOURCE, "docs", "store.md")).read()
    section = text[text.index("## From the sqlite3 shell"):]
    sql = re.search(r"```sql\n(.*?)```", section, re.S).group(1)
    con = sqlite3.connect(database)
    try:
        statements, comment, body = [], "", []
        for line in sql.splitlines():
            if line.strip().startswith("--"):
                comment += line
                continue
            body.append(line)
            if line.rstrip().endswith(";"):
                statements.append((comment, "\n".join(body)))
                comment, body = "", []
        check(len(statements) >= 6, f"docs/store.md: {len(statements)} statements found")
        for comment, body in statements:
            rows = con.execute(body).fetchall()
            may_be_empty = "failed" in comment or "repeat" in comment
            check(rows or may_be_empty, f"docs/store.md query found nothing: {body}")
            if "tile_n" in body and "GROUP BY" in body:
                check(all(r[0] is not None for r in rows), f"a parameter no GEMM trial has: {rows}")
    finally:
        con.close()


def main():
    commands = session_commands()
    check(any(c.startswith("build/autotune run") for c in commands), f"no run in the session: {commands}")
    build_dir = os.path.dirname(os.path.abspath(BIN))
    with tempdir() as tmp:
        os.symlink(build_dir, os.path.join(tmp, "build"))
        os.symlink(os.path.join(os.path.abspath(SOURCE), "configs"), os.path.join(tmp, "configs"))
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        for command in commands:
            words = shlex.split(command)
            if words[0] == "export":
                name, value = words[1].split("=", 1)
                env[name] = value
                continue
            proc = subprocess.run(words, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
            check(proc.returncode == 0, f"README command failed ({proc.returncode}): {command}\n{proc.stderr[-1500:]}")
            check(proc.stdout.strip(), f"README command printed nothing: {command}")
            for flag, written in zip(words, words[1:]):
                if flag == "-o":
                    check(os.path.getsize(os.path.join(tmp, written)) > 0, f"{command}: {written} is empty")
        database = os.path.join(tmp, env.get("AUTOTUNE_DB", "autotune.db"))
        check(os.path.exists(database), "no database written")
        check_store_queries(database)
    print("ok")


if __name__ == "__main__":
    main()
