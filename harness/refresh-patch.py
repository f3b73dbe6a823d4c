#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Rewrite patches/NAME from the kernel tree's working copy.

Edit the kernel files a patch changes in KERNEL_SRC (the tree `make apply`
made), then run this: the patch becomes the diff of those files (and of any
EXTRA files, for a hunk in a file the patch did not touch yet) between the
commit before the patch's own commit and the working tree. The style is the
one apply.py reads: "--- a/" and "+++ b/" headers, plain hunks.

Usage: refresh-patch.py REPO KERNEL_SRC NAME [EXTRA...]
"""
import re
import subprocess
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from apply import parse_series  # noqa: E402


def git(src, *args):
    return subprocess.run(["git", "-C", src, *args], check=True,
                          capture_output=True, text=True).stdout


def main():
    repo, src, name, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    path = f"{repo}/patches/{name}"
    stanzas = parse_series(f"{repo}/patches/series")
    subject = next(s["subject"] for s in stanzas if name in s["patches"])
    commit = git(src, "log", "--format=%H", "-F", f"--grep={subject}",
                 "pristine..HEAD").split()[0]
    with open(path, encoding="utf-8") as f:
        files = re.findall(r"^\+\+\+ b/(\S+)", f.read(), re.M)
    files += [e for e in extra if e not in files]
    out = []
    for fn in files:
        d = git(src, "diff", "--no-color", "-U3", f"{commit}^", "--", fn)
        for line in d.splitlines():
            if line.startswith(("diff --git", "index ")):
                continue
            out.append(re.sub(r"^(@@ [^@]* @@).*", r"\1", line))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print(f"refresh-patch: {name}: {len(files)} files")


main()
