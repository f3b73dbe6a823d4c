# SPDX-License-Identifier: GPL-2.0
"""User-assisted unwinding for CPython 3.11: perf names Python functions.

enable() opts this process in (prctl(PR_UNWIND_USER,
UNWIND_USER_ASSIST_ENABLE)); from then on each thread answers the kernel's
signal with its Python frames, and /tmp/perf-PID.map names them.  See
README.md of tools/unwind_user/python.
"""
import os
import sys

__all__ = ["enable", "disable", "flush", "stats"]

_c = None
_enabled = False
_hooks = False


def _debug(msg):
    if os.environ.get("UNWIND_ASSIST_DEBUG") == "1":
        try:
            print("unwind_assist: " + msg, file=sys.stderr)
        except Exception:
            pass


def _load():
    global _c
    if _c is None:
        from . import _unwind_assist
        if tuple(sys.version_info[:3]) != tuple(_unwind_assist.BUILT_FOR):
            raise RuntimeError("built for CPython %d.%d.%d, running %s" %
                               (tuple(_unwind_assist.BUILT_FOR) +
                                (sys.version.split()[0],)))
        _c = _unwind_assist
    return _c


def _after_fork_child():
    # The child has a new signal_struct: the kernel forgot the opt-in.
    global _enabled
    if _c is None:
        return
    try:
        _c.after_fork_child()
        if _enabled:
            err = _c.opt_in()
            if err:
                _enabled = False
                _debug("not enabled in child %d: %s" %
                       (os.getpid(), os.strerror(err)))
    except Exception as e:
        _enabled = False
        _debug("not enabled in child: %r" % (e,))


def _report():
    # UNWIND_ASSIST_DEBUG=1: what the handler did, at exit.
    if _c is not None and os.environ.get("UNWIND_ASSIST_DEBUG") == "1":
        _debug(" ".join("%s=%s" % kv for kv in sorted(_c.stats().items())))


def _install_hooks():
    global _hooks
    if not _hooks:
        import atexit
        atexit.register(flush)
        atexit.register(_report)
        os.register_at_fork(after_in_child=_after_fork_child)
        _hooks = True


def enable():
    """Opt the process in: True if the kernel took it.

    The handler stays installed even where the kernel refuses (a kernel
    without user-assisted unwinding): harmless, and what the host tests'
    hook _unwind_assist._answer() needs.
    """
    global _enabled
    if _enabled:
        return True
    try:
        c = _load()
        signo = c.install()
        _install_hooks()
        err = c.opt_in()
    except Exception as e:
        _debug("not enabled: %r" % (e,))
        return False
    if err:
        _debug("not enabled: UNWIND_USER_ASSIST_ENABLE or process_vm_readv: %s" %
               os.strerror(err))
        return False
    _enabled = True
    _debug("enabled, signal %d, map /tmp/perf-%d.map" % (signo, os.getpid()))
    return True


def disable():
    """Opt out (the handler stays: answers in flight still go out)."""
    global _enabled
    if _c is not None and _enabled:
        _c.opt_out()
        _c.flush()
    _enabled = False


def flush():
    """Write the names of newly seen functions to /tmp/perf-PID.map now."""
    if _c is not None:
        _c.flush()


def stats():
    """Counters of the signal handler (dict), {} if never installed."""
    if _c is None:
        return {}
    d = _c.stats()
    d["enabled"] = _enabled
    return d


def _autoenable():
    # From unwind_assist.pth: never fails Python start-up.
    try:
        enable()
    except BaseException as e:
        _debug("not enabled: %r" % (e,))
