#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Assert that perf's own `perf script` output of the demo workload has the
# expected user stacks: the hot chain
#   convolve_pixel > filter_row > filter_pass > filter_image > apply_filters
#   > process_image > run_jobs > main
# appears, leaf first and consecutively, in at least MIN_SHARE (default 0.5)
# of the samples whose leaf is convolve_pixel (at least 50 of them), and of
# the samples whose leaf is a workload function at least MIN_EXACT (default
# 0.95) have exactly the right caller at every level up to main.
#
# Usage: check-perf.sh FILE [MIN_SHARE [MIN_EXACT]]
#   FILE is either the text of `perf script` (any -F that keeps ip and sym,
#   e.g. the default or -F comm,tid,time,event,ip,sym,dso; use --no-inline in
#   a guest without addr2line), "-" for stdin, or a results.log of the demo
#   guest, from which the SFrame run (### demo-script sframe) is taken.
# Prints one line "ok - ..." or "not ok - ..."; exit status 0 if it holds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '3,18p' "$0" >&2; exit 2; }
# The top directory is the module path (harness/__init__.py).
PYTHONPATH="$(dirname "$HERE")${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m demo.perfscript check "$@"
