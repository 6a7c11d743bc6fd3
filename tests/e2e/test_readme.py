"""The README works as written: every command block after the install one runs, in order, as one shell
session on a fresh database, from a fresh folder laid out like a checkout (the build, the configs, ../shared),
and each command succeeds and prints; docs/store.md's sqlite3 examples run on that database; then every
runnable example of docs/*.md (lines written `build/autotune ...`) does the same."""
import os
import re
import shlex
import sqlite3
import subprocess

from loop_support import BIN, SOURCE, check, tempdir


def commands_of(block):
    """The commands of a shell block: comments dropped, continued lines joined."""
    commands, pending = [], ""
    for line in block.splitlines():
        line = line.split("  #", 1)[0].rstrip() if not line.lstrip().startswith("#") else ""
        if line.endswith("\\"):  # continued on the next line
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            commands.append(line)
    return commands


def plain_blocks(path):
    """The fenced blocks without a language tag (shell sessions), in order."""
    blocks, current = [], None
    for line in open(path).read().splitlines():
        if line.startswith("```"):
            if current is None:
                current = [] if line.strip() == "```" else False  # False: a block in another language
            else:
                if current is not False:
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current:
            current.append(line)
        elif current == []:
            current.append(line)
    return blocks


def readme_commands():
    """Every block of the README but the install one, in order: as one shell session."""
    blocks = plain_blocks(os.path.join(SOURCE, "README.md"))
    check(len(blocks) >= 3, f"README: {len(blocks)} command blocks")
    check("scripts/setup.sh" in blocks[0], "the README's first block is no longer the install one")
    return [c for block in blocks[1:] for c in commands_of(block)]


def docs_commands():
    """The docs' runnable examples: lines written as `build/autotune ...` (a bare `autotune ...` is a synopsis
    with placeholders), with the variables their block assigns."""
    out = []
    for name in sorted(os.listdir(os.path.join(SOURCE, "docs"))):
        if not name.endswith(".md"):
            continue
        for block in plain_blocks(os.path.join(SOURCE, "docs", name)):
            for command in commands_of(block):
                if re.match(r"^[A-Z_]+=\S+$", command) or command.startswith("build/autotune "):
                    out.append((name, command))
    return out


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


def run_session(commands, root, env, where):
    for command in commands:
        if re.match(r"^(export )?[A-Z_]+=\S+$", command):  # a variable for what follows
            name, value = command.split(" ", 1)[-1].split("=", 1)
            env[name] = value
            continue
        words = [os.path.expandvars(w) if "$" in w else w for w in shlex.split(command)]
        words = [re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), m.group(0)), w) for w in words]
        proc = subprocess.run(words, cwd=root, env=env, capture_output=True, text=True, timeout=3600)
        check(proc.returncode == 0, f"{where} command failed ({proc.returncode}): {command}\n{proc.stderr[-1500:]}")
        check(proc.stdout.strip(), f"{where} command printed nothing: {command}")
        for flag, written in zip(words, words[1:]):
            if flag == "-o":
                check(os.path.getsize(os.path.join(root, written)) > 0, f"{command}: {written} is empty")


def main():
    commands = readme_commands()
    check(any(c.startswith("build/autotune run") for c in commands), f"no run in the session: {commands}")
    examples = docs_commands()
    check(len(examples) >= 4, f"docs: {len(examples)} runnable examples found")
    build_dir = os.path.dirname(os.path.abspath(BIN))
    with tempdir() as tmp:
        # A checkout's layout: the build and the configs in main/, the shared data beside it.
        root = os.path.join(tmp, "main")
        os.mkdir(root)
        os.symlink(build_dir, os.path.join(root, "build"))
        os.symlink(os.path.join(os.path.abspath(SOURCE), "configs"), os.path.join(root, "configs"))
        os.symlink(os.path.join(os.path.abspath(SOURCE), "..", "shared"), os.path.join(tmp, "shared"))
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        run_session(commands, root, env, "README")
        database = os.path.join(root, env.get("AUTOTUNE_DB", "autotune.db"))
        check(os.path.exists(database), "no database written")
        check_store_queries(database)
        for name, command in examples:
            run_session([command], root, env, f"docs/{name}")
        print(f"README: {len(commands)} commands; docs: {len(examples)} example lines")
    print("ok")


if __name__ == "__main__":
    main()
