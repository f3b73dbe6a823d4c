#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-hooks: what exec, mmap and fork cost a machine that has the
# SFrame unwinder built in and does not profile. Boots the production
# kernel and the same kernel without the unwinder, one after the other,
# with the same initramfs (hooks_bench, run by guest-hooks.sh), and prints
# each operation's time on both and their ratio (report.py).
#
# Usage: run-hooks.sh BZIMAGE_ON BZIMAGE_OFF OUTDIR TIMEOUT
#   OUTDIR gets build/, guest/, the initramfs, on/ and off/ (each boot's
#   console.log and results.log) and report.txt.
set -euo pipefail
ON=$1 OFF=$2 OUT=$3 TIMEOUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=harness/experiment.sh
. "$HERE/../../harness/experiment.sh"

experiment_begin hooks "$OUT"
mkdir -p "$OUT/build"
gcc -O2 -Wall -Wextra -o "$G/hooks_bench" "$HERE/hooks_bench.c"
gcc -O2 -Wall -o "$G/true" "$HERE/true.c"
# The same with a section of its own (PT_GNU_SFRAME): what exec and mmap
# look at for a file that may have a table.
gcc -O2 -Wall -Wa,--gsframe -o "$G/true_sframe" "$HERE/true.c"
libc=$(ldd "$G/true" | sed -n 's/.*libc.so.6 => \([^ ]*\).*/\1/p')
echo "LIBC=$libc" >"$G/hooks.env"
printf '%s\n' "${HOOKS_ENV:-}" >>"$G/hooks.env"
experiment_guest "$HERE/guest-hooks.sh"

for k in on off; do
	bz=$ON
	[ $k = off ] && bz=$OFF
	experiment_boot "$bz" "$TIMEOUT"
	rm -rf "${OUT:?}/$k"
	mv "$OUT/run" "$OUT/$k"
done
experiment_report run_py bench.hooks.report "$OUT/on/results.log" "$OUT/off/results.log"
