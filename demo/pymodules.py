# SPDX-License-Identifier: GPL-2.0
"""Write the files of the standard library that a Python command imports,
one a line, to OUTFILE, for the guest's initramfs (make demo's Python
rows: the guest gets these files of the host's python3.11 and nothing
else of it).

Usage: python3.11 -S pymodules.py OUTFILE SCRIPT ARGS...  (python3.11 -S SCRIPT)
       python3.11 -S pymodules.py OUTFILE -m MODULE ARGS...
"""
import atexit
import os
import runpy
import sys

# The stdlib, and what Python looks for to find it (its landmark).
LIB = os.path.dirname(os.__file__)


def files(out):
    found = {os.path.join(LIB, 'os.py')}
    for m in list(sys.modules.values()):
        f = getattr(m, '__file__', None)
        if f and os.path.abspath(f).startswith(LIB + os.sep):
            found.add(os.path.abspath(f))
    with open(out, 'a') as f:
        f.write(''.join(f'{p}\n' for p in sorted(found)))


def main():
    atexit.register(files, sys.argv[1])
    del sys.argv[1]
    if sys.argv[1] == '-m':
        sys.argv = sys.argv[2:]
        runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)
    else:
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name='__main__')


if __name__ == '__main__':
    main()
