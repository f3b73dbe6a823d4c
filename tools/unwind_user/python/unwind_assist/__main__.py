# SPDX-License-Identifier: GPL-2.0
"""python3 -m unwind_assist script.py [args...]  (or -m module [args...])

Enables user-assisted unwinding, then runs the script as `python3 script.py`
would: sys.argv, sys.path[0], __main__, exit status and tracebacks.
"""
import os
import runpy
import sys

import unwind_assist


def _usage():
    print("usage: python3 -m unwind_assist script.py|-m module [args...]",
          file=sys.stderr)
    sys.exit(2)


def _run():
    args = sys.argv[1:]
    if not args:
        _usage()
    unwind_assist.enable()
    if args[0] == "-m":
        if len(args) < 2:
            _usage()
        sys.argv = args[1:]
        # As python3 -m: sys.path[0] is the current directory (it is).
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = args
    path = args[0]
    # As python3 script.py: the script's directory, not ours, first.
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    runpy.run_path(path, run_name="__main__")


def main():
    try:
        _run()
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:
        # The traceback python3 script.py would print: without our frames
        # and runpy's.
        tb = e.__traceback__
        here = {__file__, runpy.__file__}
        while tb is not None and (tb.tb_frame.f_code.co_filename in here or
                                  tb.tb_frame.f_code.co_filename.startswith(
                                      "<frozen runpy")):
            tb = tb.tb_next
        if tb is not None:
            e.__traceback__ = tb
        sys.excepthook(type(e), e, e.__traceback__)
        sys.exit(1)


if __name__ == "__main__":
    main()
