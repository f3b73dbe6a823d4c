# SPDX-License-Identifier: GPL-2.0
"""The torture run of tools/unwind_user/python's extension (make demo, row
"pytorture"): threads are created and finish all the time, each building
and unwinding deep call chains, nested generators, exceptions thrown
through generators and code objects made and freed, while perf samples at
a high rate and the extension answers every request. It must end on time,
with every thread joined, no crash and no interpreter error.

Usage: pytorture.py SECONDS
"""
import sys
import threading
import time


def nums(k):
    for i in range(k):
        yield i


def nested(depth):
    if depth == 0:
        yield from range(10)
    else:
        yield from nested(depth - 1)


def deep(n, gen):
    # Deeper than an answer holds at times: those requests get no frames.
    if n == 0:
        return sum(gen)
    return deep(n - 1, gen) + 1


def raising():
    yield 1 // 0


def churn(end, out, k):
    n = 0
    while time.monotonic() < end:
        deep(20 + n % 260, nums(20))
        sum(nested(n % 40))
        try:
            deep(n % 30, raising())
        except ZeroDivisionError:
            pass
        # A code object made and freed, its name one of a few.
        exec(compile(f'def f{n % 5}():\n    return {n}\nf{n % 5}()', f'<gen{n % 7}>', 'exec'), {})
        n += 1
    out[k] = n


def main(secs):
    end = time.monotonic() + secs
    out = {}
    started = 0
    while time.monotonic() < end:
        batch = [threading.Thread(target=churn, args=(min(end, time.monotonic() + 0.3), out, started + i))
                 for i in range(8)]
        started += len(batch)
        for t in batch:
            t.start()
        for t in batch:
            t.join()
    # On stderr: the guest records this run to a pipe on stdout.
    print(f'pytorture: {started} threads joined, {sum(out.values())} rounds', file=sys.stderr)
    return 0 if len(out) == started else 1


if __name__ == '__main__':
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 60))
