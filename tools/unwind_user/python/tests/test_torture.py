# SPDX-License-Identifier: GPL-2.0
"""Torture: threads come and go running deep chains, generators and
callbacks from C while a thread fires the handler at them at a high rate.
No crash, no hang; every answer empty or a real stack of the workload.
TORTURE_SECONDS (default 20) sets the length.
"""
import os
import random
import sys
import threading
import time
import unittest

import unwind_assist

unwind_assist.enable()
C = unwind_assist._c
F = os.path.basename(__file__)


def deep(n, k):
    if n:
        return deep(n - 1, k)
    return sum(g_outer(k)) + sorted(range(k), key=keyf)[0]


def g_inner(k):
    for i in range(k):
        yield i


def g_outer(k):
    yield from g_inner(k)
    yield from (x for x in g_inner(k))


def keyf(x):
    return -deep(0, 1) if x == 1 else x


def life(k):
    for _ in range(20):
        deep(random.randrange(40), k)


def worker(stop, ids):
    while not stop.is_set():
        t = threading.Thread(target=life, args=(random.randrange(1, 6),))
        t.start()
        ids.append(t)
        life(3)
        t.join()
        ids.remove(t)


# Who may call whom, innermost first (callee -> callers).
CALLERS = {
    "deep": {"deep", "life", "keyf"},
    "keyf": {None},                     # from sorted(): starts a run
    "g_inner": {None, "<genexpr>", "g_outer"},
    "g_outer": {None},
    "<genexpr>": {None},
    "life": {None, "worker"},
    "worker": {None},
}
RUN_START = {"keyf", "g_inner", "g_outer", "<genexpr>", "life", "worker"}


def short(n):
    q, f = n.rsplit(" (", 1)
    return q.rsplit(".", 1)[-1], f.split(":")[0]


def valid(runs):
    """A prefix-consistent stack of this workload's threads."""
    names = [n for r in runs for n in r]
    if not names or not names[-1].startswith("Thread._bootstrap "):
        return False
    for r in runs:
        for i, n in enumerate(r):
            q, f = short(n)
            if f in ("threading.py", "random.py"):
                continue
            if f != F:
                return False
            if i + 1 < len(r):
                outer = short(r[i + 1])
                if outer[1] == F and outer[0] not in CALLERS.get(q, ()):
                    return False
            elif q not in RUN_START:
                return False
    return True


class TestTorture(unittest.TestCase):
    def test_torture(self):
        secs = float(os.environ.get("TORTURE_SECONDS", "20"))
        stop = threading.Event()
        ids = []
        ws = [threading.Thread(target=worker, args=(stop, ids))
              for _ in range(6)]
        for w in ws:
            w.start()
        n = ok = empty = 0
        bad = []
        reasons = {}
        end = time.monotonic() + secs
        while time.monotonic() < end:
            pool = [t for t in list(ids) + ws if t.native_id]
            t = random.choice(pool)
            try:
                runs, why = C._answer(t.native_id)
            except OSError:
                reasons["gone"] = reasons.get("gone", 0) + 1
                continue        # the thread had finished
            n += 1
            reasons[why] = reasons.get(why, 0) + 1
            if runs is None:
                empty += 1
            elif valid(runs):
                ok += 1
            else:
                bad.append(runs)
        stop.set()
        for w in ws:
            w.join()
        print("\ntorture: %d answers in %.0f s: %d valid, %d empty, %d bad; "
              "%r; stats %r" % (n, secs, ok, empty, len(bad), reasons,
                                C.stats()), file=sys.stderr)
        self.assertEqual(bad[:3], [])
        self.assertGreater(ok, n // 2)


if __name__ == "__main__":
    unittest.main()
