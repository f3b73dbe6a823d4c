#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print the import graph of a Rust crate's modules, one directory of
files (kernel/unwind_user/), and fail if it has a cycle.

A module imports another when its code names `crate::OTHER` (in a `use`
line, grouped or not, or in a path). Test code is left out: everything
from a file's first `#[kunit_tests]`, `#[cfg(test)]` or
`#[cfg(CONFIG_KUNIT...)]` attribute on, which this crate keeps at the end
of each file. The crate root (the file named after the directory) is not a
node; the modules are those it declares (`mod NAME;`).

Usage: module-graph.py DIR
Exit status: 0 if the graph has no cycle, 1 if it has one (printed).
"""
import os
import re
import sys

TESTS = re.compile(r"^#\[(kunit_tests|cfg\(test\)|cfg\(CONFIG_KUNIT)", re.M)


def imports(text, names):
    """The modules of `names` that `text` names as crate::MODULE."""
    cut = TESTS.search(text)
    if cut:
        text = text[:cut.start()]
    text = re.sub(r"//.*", "", text)
    found = set(re.findall(r"crate::(\w+)", text))
    # use crate::{a::b, c, d::{e, f}}: the names at the group's top level.
    for m in re.finditer(r"crate::\{", text):
        depth, top, tok = 0, [], ""
        for c in text[m.end() - 1:]:
            if c == "{":
                depth += 1
                if depth == 1:
                    continue
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            if depth == 1 and c == ",":
                top.append(tok)
                tok = ""
            elif depth >= 1:
                tok += c
        top.append(tok)
        found.update(n.group(1) for n in (re.match(r"\s*(\w+)", t) for t in top) if n)
    return sorted(found & names)


def main():
    d = sys.argv[1].rstrip("/")
    root = os.path.basename(d)
    with open(os.path.join(d, root + ".rs"), encoding="utf-8") as f:
        names = set(re.findall(r"^(?:pub(?:\(crate\))? )?mod (\w+);", f.read(), re.M))
    files = {m: os.path.join(d, m + ".rs") for m in names}
    graph = {}
    for m, path in sorted(files.items()):
        with open(path, encoding="utf-8") as f:
            graph[m] = [n for n in imports(f.read(), names) if n != m]
    for m in sorted(graph, key=lambda m: (-len(graph[m]), m)):
        print(f"{m:14} -> {' '.join(graph[m]) or '(leaf)'}")

    # Depth-first search; a back edge is a cycle.
    state, cycles = {}, []

    def visit(m, path):
        state[m] = "open"
        for n in graph[m]:
            if state.get(n) == "open":
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    for c in cycles:
        print("cycle: " + " -> ".join(c))
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, "
          f"{len(cycles)} cycles")
    sys.exit(1 if cycles else 0)


if __name__ == "__main__":
    main()
