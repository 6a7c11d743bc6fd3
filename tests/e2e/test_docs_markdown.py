"""The README's and docs' Markdown is well formed: every fenced code block is closed and its opening fence
names at most one language; every table has a header separator row, and each row as many cells as its
header and a closing pipe when the header has one (an escaped pipe \\| does not separate cells; a pipe inside
inline code does, as on GitHub, so it must be escaped there too); every heading has a space after its #s;
every ```yaml block parses. A formatter run over Markdown (docs/goals.md once had `#Goals`, tables torn
into prose and YAML collapsed to `name : blocked - loop target : kind : ...`) breaks at least one of these;
scripts/format.sh formats the C++ sources only.

    python3 tests/e2e/test_docs_markdown.py            the README and docs/*.md (what CTest runs)
    python3 tests/e2e/test_docs_markdown.py FILE...    the given files: one line per problem, exit 1 if any
"""
import os
import re
import sys

SOURCE = os.environ.get("AUTOTUNE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

try:
    import yaml  # Debian's python3-yaml (scripts/setup.sh --all)
except ImportError:  # pragma: no cover - the structural check below stands in
    yaml = None

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# A table's separator row: cells of dashes with optional alignment colons.
SEPARATOR_CELL = re.compile(r"^\s*:?-{3,}:?\s*$")
# A key: value line a formatter spread out ("name : x") or several mappings collapsed onto one line.
COLLAPSED_YAML = re.compile(r"^\s*[A-Za-z_][\w.]* : |\S\s+-\s+\w+\s+\w+ :")


def table_cells(line, code_protects=False):
    """The cells of a table row, outer pipes dropped. As GitHub splits them: on every pipe not escaped (\\|),
    even inside inline code (GFM: a pipe in a code span in a table must be escaped too). With
    code_protects, a pipe inside inline code does not split (what the writer meant)."""
    cells, current, i, code = [], "", 0, None
    while i < len(line):
        c = line[i]
        if c == "`" and code_protects:
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            if code is None:
                # Code only if a closing run of the same length follows; a lone backtick is literal.
                if re.search(r"(?<!`)" + "`" * run + r"(?!`)", line[i + run:]):
                    code = run
            elif code == run:
                code = None
            current += line[i:i + run]
            i += run
            continue
        if c == "\\" and i + 1 < len(line):
            current += line[i:i + 2]
            i += 2
            continue
        if c == "|" and code is None:
            cells.append(current)
            current = ""
        else:
            current += c
        i += 1
    cells.append(current)
    stripped = line.strip()
    if stripped.startswith("|"):
        cells = cells[1:]
    if stripped.endswith("|") and not stripped.endswith("\\|"):
        cells = cells[:-1]
    return cells


def yaml_problem(text):
    """Why a ```yaml block is not YAML, or None."""
    for line in text.splitlines():
        if COLLAPSED_YAML.search(line.split(" #", 1)[0]):
            return f"a line looks collapsed or spread by a formatter: {line.strip()[:60]!r}"
    if yaml is None:
        return None
    try:
        list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        return "does not parse: " + " ".join(str(error).split())[:160]
    return None


def problems(text):
    """(line number, problem) for every malformation of one Markdown text."""
    out = []
    lines = text.splitlines()
    fence = None  # (marker, info, first line, body lines) of the open code block
    i = 0
    while i < len(lines):
        line = lines[i]
        number = i + 1
        match = FENCE.match(line)
        if fence is not None:
            marker = fence[0]
            if match and match.group(1)[0] == marker[0] and len(match.group(1)) >= len(marker) \
                    and not match.group(2).strip():
                if fence[1] == "yaml":
                    problem = yaml_problem("\n".join(fence[3]))
                    if problem:
                        out.append((fence[2], "yaml block " + problem))
                fence = None
            else:
                fence[3].append(line)
            i += 1
            continue
        if match:
            info = match.group(2).strip()
            if match.group(1)[0] == "`" and "`" in info:
                out.append((number, f"a fence's info string holds a backtick: {line.strip()[:60]!r}"))
            elif info and not re.fullmatch(r"[\w+#.-]+", info):
                out.append((number, f"a fence's info string is not one language word (text run onto it?): "
                                    f"{line.strip()[:60]!r}"))
            fence = (match.group(1), info.split()[0] if info else "", number, [])
            i += 1
            continue
        heading = re.match(r"^ {0,3}(#{1,6})(.*)$", line)
        if heading and heading.group(2) and not heading.group(2).startswith((" ", "\t")) \
                and not heading.group(2).startswith("#"):
            out.append((number, f"heading without a space after its #s: {line.strip()[:60]!r}"))
        elif re.match(r"^ {0,3}#{7,}", line):
            out.append((number, "heading with more than six #s"))
        if line.lstrip().startswith("|"):
            start = i
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                i += 1
            out.extend(table_problems(lines[start:i], start + 1))
            continue
        i += 1
    if fence is not None:
        out.append((fence[2], f"code block opened with {fence[0]} is never closed"))
    return out


def table_problems(rows, first):
    """Problems of one table: its rows, the first at line number `first`."""
    out = []
    header = table_cells(rows[0])
    if len(rows) < 2 or not all(SEPARATOR_CELL.match(c) for c in table_cells(rows[1])):
        return [(first, "table without a separator row (| --- | --- |) under its header")]
    separator = table_cells(rows[1])
    if len(separator) != len(header):
        out.append((first + 1, f"separator row has {len(separator)} cells, the header {len(header)}"))
    closed = rows[0].rstrip().endswith("|")
    for offset, row in enumerate(rows[2:], start=2):
        cells = table_cells(row)
        if row.rstrip().endswith("|") != closed:
            out.append((first + offset, "row " + ("does not end" if closed else "ends") + " with a pipe, unlike "
                        f"its header (a row torn across lines?): {row.strip()[:60]!r}"))
        elif len(cells) != len(header):
            why = ("an unescaped pipe inside inline code splits the cell (write \\|)"
                   if len(table_cells(row, code_protects=True)) == len(header) else "")
            out.append((first + offset, f"row has {len(cells)} cells, the header {len(header)}"
                                        + (f" ({why})" if why else "") + f": {row.strip()[:60]!r}"))
    return out


# Each kind of damage a formatter left in docs/goals.md, and well-formed text the check must accept.
SELF_TEST_BAD = {
    "heading": "#Goals\n\ntext\n",
    "unclosed fence": "text\n\n```\nautotune run goal.yaml\n",
    "fence with text run onto it": "``` autotune : error : goal.yaml : 5 : x\n```\n",
    "no separator": "| key | type |\n| `name` | string |\n",
    "cell count": "| key | type | default |\n|---|---|---|\n| `name` | string |\n",
    "pipe in code": "| key | meaning |\n|---|---|\n| `a` | `x | y` |\n",
    "row torn": "| key | meaning |\n|---|---|\n| `a` | one;\nsee docs | | `b` | two |\n",
    "collapsed yaml": "```yaml\nname : blocked - loop target : kind : command\n```\n",
    "unparsable yaml": "```yaml\nkernel: {family: gemm\nshape: [1, 2]\n```\n",
}
SELF_TEST_GOOD = (
    "# Goals\n\n## Keys\n\n"
    "| key | type | meaning |\n|---|:---:|---:|\n"
    "| `objective` | `latency` \\| `mfu` | what `a \\| b` means |\n"
    "| `x` | ``code with ` inside`` | `a \\| b` |\n\n"
    "```yaml\nname: blocked-loop\ntarget: {kind: command, argv: [\"./run\", \"{tile}\"]}\n```\n\n"
    "````\n```\nnested fence\n```\n````\n"
)


def self_test():
    for kind, text in SELF_TEST_BAD.items():
        if kind == "unparsable yaml" and yaml is None:
            continue
        if not problems(text):
            return f"the check misses {kind}: {text!r}"
    found = problems(SELF_TEST_GOOD)
    if found:
        return f"the check rejects well-formed Markdown: {found}"
    return None


def main(paths):
    failures = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for number, problem in problems(f.read()):
                failures.append(f"{os.path.relpath(path, SOURCE)}:{number}: {problem}")
    return failures


if __name__ == "__main__":
    if len(sys.argv) > 1:
        failures = main(sys.argv[1:])
    else:
        broken = self_test()
        if broken:
            print("FAIL:", broken)
            sys.exit(1)
        docs = os.path.join(SOURCE, "docs")
        paths = [os.path.join(SOURCE, "README.md")] + sorted(
            os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
        failures = main(paths)
        if not failures:
            print(f"ok: {len(paths)} Markdown files well formed"
                  + ("" if yaml else " (python3-yaml missing: yaml blocks checked for collapsed lines only)"))
    for failure in failures:
        print(failure)
    sys.exit(1 if failures else 0)
