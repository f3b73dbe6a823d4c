# SPDX-License-Identifier: GPL-2.0
"""µs per test-hook answer of a ~30-frame stack (handler + hook overhead)."""
import sys
import time

import unwind_assist

unwind_assist.enable()
C = unwind_assist._c


def rec(n, k):
    if n:
        return rec(n - 1, k)
    s0 = C.stats()
    t = time.perf_counter()
    for _ in range(k):
        C._answer()
    t = (time.perf_counter() - t) / k
    s1 = C.stats()
    return (t, (s1["handler_ns_total"] - s0["handler_ns_total"]) / k,
            len(C._answer()[0][0]))


def empty_call(k):
    t = time.perf_counter()
    for _ in range(k):
        C.stats()
    return (time.perf_counter() - t) / k


rec(28, 1000)
us, ns, depth = rec(28, 20000)
print("answer of %d frames: handler %.2f us mean, hook round trip %.2f us; "
      "handler max %.1f us (whole process life)" %
      (depth, ns / 1e3, us * 1e6, C.stats()["handler_ns_max"] / 1e3))
