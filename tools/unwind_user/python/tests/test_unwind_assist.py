# SPDX-License-Identifier: GPL-2.0
"""Host tests of unwind_assist: no kernel support needed.

_unwind_assist._answer() makes a thread run the real signal handler (a test
cookie from this process) and returns the answer it would have submitted:
(runs, reason), runs innermost first, each a list of names innermost first,
or None.  The truth is the sys._getframe() chain at the same point.
"""
import functools
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import unwind_assist

unwind_assist.enable()          # False on a host kernel; handler installed
C = unwind_assist._c
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHONPATH = os.path.dirname(os.path.dirname(os.path.abspath(
    unwind_assist.__file__)))


def name(code):
    return "%s (%s:%d)" % (code.co_qualname,
                           os.path.basename(code.co_filename),
                           code.co_firstlineno)


def truth(frame):
    out = []
    while frame is not None:
        out.append(name(frame.f_code))
        frame = frame.f_back
    return out


def here():
    """The answer and the truth at the caller's point."""
    got = C._answer()
    return got, truth(sys._getframe())


def in_thread(fn, *args):
    """fn(*args) in a fresh thread: runs [fn...], [Thread.run, ...]."""
    res = []
    t = threading.Thread(target=lambda: res.append(fn(*args)))
    t.start()
    t.join()
    return res[0]


def flat(runs):
    return [n for r in runs for n in r]


def rec(n):
    if n:
        return rec(n - 1)
    return here()


def gen_leaf():
    yield here()


def gen_mid():
    yield from gen_leaf()


def gen_top():
    yield from gen_mid()


class Ctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.seen = here()
        return True


class Init:
    def __init__(self):
        self.seen = here()


# in_thread's fn(*args) and Thread.run's self._target(...) are
# CALL_FUNCTION_EX: not inlined, each starts a run. So the thread's outer
# runs are [in_thread.<locals>.<lambda>], [Thread.run, _bootstrap_inner,
# _bootstrap], and fn is the first frame of the run above them.
BOOT = [1, 3]


class TestAnswers(unittest.TestCase):
    def check(self, got, want, lens):
        runs, why = got
        self.assertEqual(why, "ok")
        self.assertEqual(flat(runs), want)
        self.assertEqual([len(r) for r in runs], lens,
                         "run boundaries: %r" % (runs,))

    def test_recursion(self):
        got, want = in_thread(rec, 30)
        # here and rec x31: one run, started by fn(*args)
        self.check(got, want, [32] + BOOT)

    def test_recursion_limit(self):
        got, want = in_thread(rec, 300)
        self.assertEqual(got, (None, "too_big"))

    def test_main_thread(self):
        got, want = rec(5)
        runs, why = got
        self.assertEqual(why, "ok")
        self.assertEqual(flat(runs), want)
        self.assertEqual(runs[0][:7], want[:7])

    def test_sorted_key(self):
        def k(x):
            return here() if x == 2 else 0
        res = in_thread(lambda: [v for v in map(k, [1, 2]) if v][0])
        self.check(*res, [2, 2] + BOOT)
        seen = []

        def k2(x):
            if x == 2:
                seen.append(here())
            return x
        in_thread(lambda: sorted([1, 2], key=k2))
        self.check(*seen[0], [2, 1] + BOOT)

    def test_reduce(self):
        def add(a, b):
            return here() if b == 3 else a + b
        got, want = in_thread(functools.reduce, add, [1, 2, 3])
        self.check(got, want, [2] + BOOT)    # reduce is called by run

    def test_json_default(self):
        seen = []

        def default(o):
            seen.append(here())
            return 0

        def dump():
            return json.dumps({"a": [object()]}, default=default)
        in_thread(dump)
        got, want = seen[0]
        # default; iterencode, encode, dumps, dump (called by fn(*args))
        self.check(got, want, [2, 4] + BOOT)

    def test_generators(self):
        got, want = in_thread(lambda: next(gen_leaf()))
        self.check(got, want, [2, 1] + BOOT)
        got, want = in_thread(lambda: next(gen_top()))
        self.check(got, want, [2, 1, 1, 1] + BOOT)

    def test_generator_expression(self):
        got, want = in_thread(lambda: list(here() for _ in [0])[0])
        self.check(got, want, [2, 1] + BOOT)

    def test_exception_handled(self):
        def f():
            try:
                rec(0)[0][0].boom
            except (AttributeError, TypeError):
                return here()
        got, want = in_thread(f)
        self.check(got, want, [2] + BOOT)

        def g():
            try:
                raise ValueError
            finally:
                return here()
        got, want = in_thread(g)
        self.check(got, want, [2] + BOOT)

    def test_exit_and_init(self):
        def f():
            with Ctx() as c:
                raise KeyError
            return c.seen
        got, want = in_thread(f)
        self.check(got, want, [2, 1] + BOOT)
        got, want = in_thread(lambda: Init().seen)
        self.check(got, want, [2, 1] + BOOT)

    def test_other_thread_blocked(self):
        ready, done = threading.Event(), threading.Event()
        box = {}

        def victim():
            box["id"] = threading.get_native_id()
            box["truth"] = truth(sys._getframe())
            ready.set()
            done.wait()
        t = threading.Thread(target=victim)
        t.start()
        ready.wait()
        time.sleep(0.05)
        runs, why = C._answer(box["id"])
        done.set()
        t.join()
        self.assertEqual(why, "ok")
        # victim -> Event.wait -> Condition.wait, innermost two in the wait
        self.assertEqual(flat(runs)[-len(box["truth"]):], box["truth"])
        self.assertEqual(flat(runs)[0].split()[0], "Condition.wait")

    def test_writer_thread_and_unknown(self):
        # A native thread without a Python thread state answers empty.
        self.assertRaises(OSError, C._answer, 0x3fffffff)

    def test_map_file(self):
        rec(2)
        unwind_assist.flush()
        with open("/tmp/perf-%d.map" % os.getpid()) as f:
            lines = f.read().splitlines()
        names = {" ".join(l.split()[2:]) for l in lines}
        self.assertIn(name(rec.__code__), names)
        base, end = C.info()["base"], C.info()["base"] + 16 * C.NR_SLOTS
        for l in lines:
            a, s = l.split()[:2]
            self.assertTrue(base <= int(a, 16) < end and s == "10", l)

    def test_fork(self):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                got, want = rec(1)
                ok = flat(got[0]) == want
                unwind_assist.flush()
                m = open("/tmp/perf-%d.map" % os.getpid()).read()
                ok = ok and name(rec.__code__) in m
                os.write(w, b"ok" if ok else b"bad")
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(os.read(r, 10), b"ok")
        os.waitpid(pid, 0)
        os.unlink("/tmp/perf-%d.map" % pid)


def run_py(args, env=None, cwd=None):
    e = dict(os.environ, PYTHONPATH=PYTHONPATH)
    e.update(env or {})
    return subprocess.run([sys.executable] + args, capture_output=True,
                          text=True, env=e, cwd=cwd)


class TestStartup(unittest.TestCase):
    def test_main_runner(self):
        with tempfile.TemporaryDirectory() as d:
            s = os.path.join(d, "s.py")
            with open(s, "w") as f:
                f.write("import sys, os\n"
                        "print(__name__, sys.argv, sys.path[0] == "
                        "os.path.dirname(os.path.realpath(__file__)))\n"
                        "if sys.argv[1] == 'x': raise ValueError('boom')\n"
                        "sys.exit(int(sys.argv[1]))\n")
            for a in (["3"], ["x"]):
                want = run_py([s] + a)
                got = run_py(["-m", "unwind_assist", s] + a, cwd="/")
                self.assertEqual(got.returncode, want.returncode)
                self.assertEqual(got.stdout, want.stdout)
                self.assertEqual(got.stderr, want.stderr)

    def test_pth(self):
        with tempfile.TemporaryDirectory() as d:
            os.symlink(os.path.dirname(unwind_assist.__file__),
                       os.path.join(d, "unwind_assist"))
            with open(os.path.join(PYTHONPATH, "unwind_assist.pth")) as f:
                pth = f.read()
            with open(os.path.join(d, "unwind_assist.pth"), "w") as f:
                f.write(pth)
            code = ("import site, sys; site.addsitedir(%r); "
                    "print('unwind_assist' in sys.modules)" % d)
            off = subprocess.run([sys.executable, "-S", "-c", code],
                                 capture_output=True, text=True,
                                 env={"UNWIND_ASSIST_DEBUG": "1"})
            self.assertEqual((off.stdout, off.stderr), ("False\n", ""))
            on = subprocess.run([sys.executable, "-S", "-c", code],
                                capture_output=True, text=True,
                                env={"UNWIND_ASSIST": "1",
                                     "UNWIND_ASSIST_DEBUG": "1"})
            self.assertEqual(on.returncode, 0)
            self.assertEqual(on.stdout, "True\n")
            # Host kernel: refused, said on stderr only with DEBUG.
            self.assertIn("unwind_assist: ", on.stderr)
            quiet = subprocess.run([sys.executable, "-S", "-c", code],
                                   capture_output=True, text=True,
                                   env={"UNWIND_ASSIST": "1"})
            self.assertEqual((quiet.stdout, quiet.stderr), ("True\n", ""))


if __name__ == "__main__":
    unittest.main()
