#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn this repository into a series of commits on top of the pristine tree.

patches/series lists the logical changes in order.  Each stanza has a
"Subject:" line, optional "Files:" (paths of this repository, copied to the
same place in the kernel tree; a directory means every file under it) and
"Patches:" (diffs of existing kernel files, in patches/), a blank line and
the commit message body; stanzas are separated by a line "%%".

The commits are built in a temporary index, so nothing in the working tree
is touched until the final checkout, which rewrites only the files that
differ: an unchanged stanza gives the same commit id (fixed dates and
author), and a changed file keeps make's incremental rebuild small.

Usage: apply.py REPO KERNEL_SRC   (prints the resulting commit id)
"""
import os
import subprocess
import sys
import tempfile

IDENT = {
    "GIT_AUTHOR_NAME": "unwind_user developers",
    "GIT_AUTHOR_EMAIL": "unwind-user@lists.invalid",
    "GIT_AUTHOR_DATE": "2026-11-21T00:00:00Z",
    "GIT_COMMITTER_NAME": "unwind_user developers",
    "GIT_COMMITTER_EMAIL": "unwind-user@lists.invalid",
    "GIT_COMMITTER_DATE": "2026-11-21T00:00:00Z",
}


def parse_series(path):
    stanzas = []
    with open(path, encoding="utf-8") as f:
        blocks = f.read().split("\n%%\n")
    for block in blocks:
        lines = [l for l in block.strip("\n").split("\n") if not l.startswith("#")]
        if not any(l.strip() for l in lines):
            continue
        st = {"subject": None, "files": [], "patches": [], "body": []}
        i = 0
        while i < len(lines) and lines[i].strip():
            key, _, val = lines[i].partition(":")
            key = key.strip().lower()
            if key == "subject":
                st["subject"] = val.strip()
            elif key in ("files", "patches"):
                st[key] += val.split()
            else:
                sys.exit(f"apply: {path}: unknown field {key!r}")
            i += 1
        st["body"] = "\n".join(lines[i:]).strip()
        if not st["subject"] or not st["body"]:
            sys.exit(f"apply: {path}: a stanza needs a Subject and a body")
        stanzas.append(st)
    return stanzas


def expand(repo, paths):
    out = []
    for p in paths:
        full = os.path.join(repo, p)
        if os.path.isdir(full):
            for root, dirs, files in os.walk(full):
                dirs.sort()
                for name in sorted(files):
                    out.append(os.path.relpath(os.path.join(root, name), repo))
        elif os.path.isfile(full):
            out.append(p)
        else:
            sys.exit(f"apply: {p} listed in patches/series does not exist")
    return out


def git(src, *args, env=None, inp=None):
    r = subprocess.run(["git", "-C", src, *args], env=env, input=inp,
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"apply: git {' '.join(args)} failed:\n{r.stderr}")
    return r.stdout.strip()


def main():
    repo, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    stanzas = parse_series(os.path.join(repo, "patches", "series"))
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"), **IDENT)
        git(src, "read-tree", "pristine", env=env)
        parent = git(src, "rev-parse", "pristine^{commit}")
        for st in stanzas:
            for rel in expand(repo, st["files"]):
                full = os.path.join(repo, rel)
                sha = git(src, "hash-object", "-w", full, env=env)
                mode = "100755" if os.access(full, os.X_OK) else "100644"
                git(src, "update-index", "--add", "--cacheinfo",
                    f"{mode},{sha},{rel}", env=env)
            for p in st["patches"]:
                r = subprocess.run(["git", "-C", src, "apply", "--cached",
                                    os.path.join(repo, "patches", p)],
                                   env=env, capture_output=True, text=True)
                if r.returncode:
                    sys.exit(f"apply: patches/{p} does not apply:\n{r.stderr}")
            tree = git(src, "write-tree", env=env)
            msg = (f"{st['subject']}\n\n{st['body']}\n\n"
                   f"Signed-off-by: {IDENT['GIT_AUTHOR_NAME']} <{IDENT['GIT_AUTHOR_EMAIL']}>\n")
            parent = git(src, "commit-tree", tree, "-p", parent, env=env, inp=msg)
    git(src, "checkout", "-q", "--detach", parent)
    print(parent)


if __name__ == "__main__":
    main()
