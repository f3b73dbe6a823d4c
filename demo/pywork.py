# SPDX-License-Identifier: GPL-2.0
"""The demo's Python workload (make demo, rows "py"): an unmodified program
run by Debian's python3.11, whose time goes to Python functions called in
known ways, from several threads: recursion, a generator, exceptions raised
and caught, C code calling back into Python (json's C encoder calling
`default=`, re.sub calling its replacement function), and a thread that
spawns child processes with subprocess. With tools/unwind_user/python's
extension (python3 -m unwind_assist pywork.py) the profile names the
functions; demo/report.py checks their order against CALLERS.

Usage: pywork.py SECONDS
       pywork.py --rounds N   (the main thread alone, N rounds, timed)
"""
import json
import re
import subprocess
import sys
import threading
import time

# Each function of this file and the functions that may call it, by
# qualified name; and the same for the functions of the standard library
# that call into it or that it calls, by (qualified name, file).
# demo/report.py checks the order of the frames perf names against them.
CALLERS = {
    'fib': {'fib', 'work'},
    'squares': {'gen_sum'},
    'gen_sum': {'work'},
    'risky': {'guarded'},
    'guarded': {'work'},
    'Item.__init__': {'encode.<locals>.<listcomp>'},
    'encode.<locals>.<listcomp>': {'encode'},
    'to_jsonable': {'JSONEncoder.iterencode'},
    'encode': {'work'},
    'repl': {'sub'},
    'text_work': {'work'},
    'work': {'worker', 'run_all'},
    'worker': {'Thread.run'},
    'spawn': {'Thread.run'},
    'run_all': {'<module>'},
}
STDLIB_CALLERS = {
    ('dumps', '__init__.py'): {'encode'},
    ('sub', '__init__.py'): {'text_work'},
    ('run', 'subprocess.py'): {'spawn'},
    ('Thread.run', 'threading.py'): {'Thread._bootstrap_inner'},
    ('Thread._bootstrap_inner', 'threading.py'): {'Thread._bootstrap'},
}
# Where a Python stack may end: the script's module (the main thread) and
# threading's start of a thread.
ROOTS = {('<module>', 'pywork.py'), ('Thread._bootstrap', 'threading.py')}


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def squares(n):
    for i in range(n):
        yield i * i


def gen_sum(n):
    # sum() is C: the generator runs in a loop of its own, above it.
    return sum(squares(n))


class Risky(Exception):
    pass


def risky(i):
    if i % 3 == 0:
        raise Risky(i)
    return i


def guarded(n):
    total = 0
    for i in range(n):
        try:
            total += risky(i)
        except Risky:
            total -= 1
    return total


class Item:
    __slots__ = ('v',)

    def __init__(self, v):
        self.v = v


def to_jsonable(o):
    # Called by json's C encoder (default=).
    return {'v': o.v, 'w': [o.v, str(o.v)]}


def encode(n):
    return len(json.dumps([Item(i) for i in range(n)], default=to_jsonable))


def repl(m):
    # Called by re's C code for each match.
    return str(int(m.group(0)) * 7)


TEXT = ' '.join(f'w{i} {i * 13}' for i in range(60))


def text_work():
    return len(re.sub(r'\d+', repl, TEXT))


def work():
    return fib(15) + gen_sum(2000) + guarded(600) + encode(80) + text_work()


def worker(stop, counts, k):
    while not stop.is_set():
        work()
        counts[k] += 1


def spawn(stop, children):
    while not stop.is_set():
        r = subprocess.run(['true'])
        children[0 if r.returncode == 0 else 1] += 1
        time.sleep(0.05)


def run_all(secs):
    stop = threading.Event()
    counts = [0, 0, 0]
    children = [0, 0]
    threads = [threading.Thread(target=worker, args=(stop, counts, k)) for k in (1, 2)]
    threads.append(threading.Thread(target=spawn, args=(stop, children)))
    for t in threads:
        t.start()
    end = time.monotonic() + secs
    while time.monotonic() < end:
        work()
        counts[0] += 1
    stop.set()
    for t in threads:
        t.join()
    print(f'pywork: {sum(counts)} rounds, threads {len(threads)} joined, '
          f'children {children[0]} ok {children[1]} failed', flush=True)
    return 0 if children[0] and not children[1] else 1


def timed(rounds):
    t = time.perf_counter()
    for _ in range(rounds):
        work()
    print(f'pywork: {rounds} rounds in {time.perf_counter() - t:.4f} s', flush=True)
    return 0


if __name__ == '__main__':
    if sys.argv[1:2] == ['--rounds']:
        sys.exit(timed(int(sys.argv[2])))
    sys.exit(run_all(float(sys.argv[1]) if len(sys.argv) > 1 else 8))
