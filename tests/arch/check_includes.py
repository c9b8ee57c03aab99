#!/usr/bin/env python3
"""Checks the include rules of docs/ARCHITECTURE.md against the code.

The rules are the doc's Folders table: its 'folder' column names the folders,
its 'may include' column what each may include (the grammar is the paragraph
under the table). Every quoted #include of the C, CUDA and header files under
src/, cuda/ and include/ is resolved to a file and so to the table's folder
that holds it (the longest folder of the table that is a prefix of its path);
an include between two folders that the table does not allow is printed as
FILE:LINE with the rule it breaks. A folder of the table that does not exist
yet is no error; a file under src/, cuda/ or include/ whose folder has no row
is one. The table is checked too: every name in the column must be a folder
or a header of the table, listed above the row (includes point up the table).

usage: check_includes.py REPO_ROOT
exit status: 0 clean, 1 violations, 2 the doc or the tree could not be read.
Standard library only (Debian's /usr/bin/python3)."""

import os
import re
import sys

SCANNED = ("src", "cuda", "include")  # the trees whose includes are checked
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def fail(msg):
    print("check_includes: " + msg)
    sys.exit(2)


def split_top(cell):
    """Splits a cell at the commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in cell:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def read_table(doc):
    """[(folder, may_include_cell)] in table order, from the table under '## Folders'."""
    try:
        text = open(doc, encoding="utf-8").read()
    except OSError as e:
        fail("cannot read %s: %s" % (doc, e))
    m = re.search(r"^## Folders\s*$(.*?)(?=^## )", text, re.M | re.S)
    if not m:
        fail("%s has no '## Folders' section" % doc)
    rows = [l.strip() for l in m.group(1).splitlines() if l.strip().startswith("|")]
    if len(rows) < 3:
        fail("no table in the Folders section of %s" % doc)
    head = [c.strip().lower() for c in rows[0].strip("|").split("|")]
    if "folder" not in head or "may include" not in head:
        fail("the Folders table has no 'folder' and 'may include' columns: %s" % head)
    fi, mi = head.index("folder"), head.index("may include")
    table = []
    for r in rows[2:]:
        cells = [c.strip() for c in r.strip("|").split("|")]
        if len(cells) != len(head):
            fail("a row of the Folders table has %d cells, the header %d: %s" % (len(cells), len(head), r))
        folder = cells[fi].strip("`").strip().rstrip("/")
        table.append((folder, cells[mi]))
    return table


def parse_rules(table):
    """{folder: (set of folders, set of headers)} allowed to each folder; table errors are fatal."""
    short = {}
    for i, (folder, _) in enumerate(table):
        name = folder.split("/")[-1]
        if name in short:
            fail("two folders of the table are both called '%s'" % name)
        short[name] = (i, folder)
    rules, errors = {}, []
    for i, (folder, cell) in enumerate(table):
        folders, headers = set(), set()
        text = re.sub(r"\([^)]*\)", "", cell).replace("`", "").strip()
        if text in ("", "nothing of the project"):
            pass
        elif text == "everything":
            folders = {f for f, _ in table[:i]}
        else:
            for entry in split_top(cell):
                name = re.sub(r"\([^)]*\)", "", entry).replace("`", "").strip()
                top = name.split("/")[0]
                if top not in short:
                    errors.append("row %s: '%s' is no folder of the table" % (folder, name))
                    continue
                j, target = short[top]
                if j >= i:
                    errors.append("row %s: '%s' is not above it in the table (includes point up)" % (folder, name))
                if "/" in name:
                    headers.add(os.path.normpath(target + "/" + name.split("/", 1)[1]))
                else:
                    folders.add(target)
        rules[folder] = (folders, headers)
    if errors:
        fail("docs/ARCHITECTURE.md, Folders table:\n  " + "\n  ".join(errors))
    return rules


def folder_of(path, folders):
    """The longest folder of the table that holds path (relative to the root), or None."""
    best = None
    for f in folders:
        if (path == f or path.startswith(f + "/")) and (best is None or len(f) > len(best)):
            best = f
    return best


def resolve(root, src, inc):
    """The repository path of the file that #include "inc" in src names, or None. Searched as the compilers
    do: the including file's folder, then the include folders the build adds (include/, src/); a protobuf-c
    header (NAME.pb-c.h) is proto/'s, which generates it at build time (proto/meson.build)."""
    for base in (os.path.dirname(src), "include", "src"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    m = re.fullmatch(r"([\w.-]+)\.pb-c\.h", inc)
    if m and os.path.isfile(os.path.join(root, "proto", "meson.build")):
        return "proto/" + inc
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    table = read_table(os.path.join(root, "docs", "ARCHITECTURE.md"))
    rules = parse_rules(table)
    folders = [f for f, _ in table]
    violations, n_files, n_includes = [], 0, 0
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for fn in sorted(filenames):
                if not fn.endswith(SOURCE_EXT):
                    continue
                path = os.path.relpath(os.path.join(dirpath, fn), root)
                own = folder_of(path, folders)
                if own is None:
                    violations.append("%s: its folder has no row in the Folders table" % path)
                    continue
                n_files += 1
                allowed, headers = rules[own]
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for ln, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        n_includes += 1
                        inc = m.group(1)
                        target = resolve(root, path, inc)
                        if target is None:
                            violations.append('%s:%d: #include "%s": no such file' % (path, ln, inc))
                            continue
                        to = folder_of(target, folders)
                        if to == own or to in allowed or target in headers:
                            continue
                        violations.append('%s:%d: #include "%s": %s/ may not include %s (%s)' % (
                            path, ln, inc, own, to + "/" if to else "a file outside the table", target))
    for v in violations:
        print(v)
    print("%d files, %d quoted includes checked against docs/ARCHITECTURE.md: %d violation%s" % (
        n_files, n_includes, len(violations), "" if len(violations) == 1 else "s"))
    if n_files == 0:
        print("check_includes: no source file found under %s" % ", ".join(SCANNED))
        return 2
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
