#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make profile: where the instructions of an SFrame walk go. Boots the
# production kernel once with QEMU's TCG plugin insn_plugin.c, which counts
# every kernel instruction run inside unwind_user_types() (from its entry
# to the next ktime_get(), which the benchmark module calls right after
# its walks), while the guest runs one unwind_bench command
# (bench/unwind_bench.c) with SFrame walks only; then prints the
# instructions per walk by function (bench/profile/report.py), or one
# function's disassembly with its counts.
#
# Usage: run-profile.sh BZIMAGE OUTDIR TIMEOUT VMLINUX SYSTEM_MAP
# Environment: PROFILE, the unwind_bench command ("cold_file 4 200": the
#   first walk of a shallow stack after the rule cache was emptied, with
#   the rows in a file's table; "step 200 50 1": warm, deep; "uncovered
#   200 50 1": the miss path); ANNOTATE, a function to disassemble.
set -euo pipefail
BZ=$1 OUT=$2 TIMEOUT=$3 VMLINUX=$4 MAP=$5
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=harness/experiment.sh
. "$HERE/../../harness/experiment.sh"

PROFILE=${PROFILE:-cold_file 4 200}
# The guest's shell reads it from bench.env: words of unwind_bench's.
case $PROFILE in *[!A-Za-z0-9_\ ]*)
	echo "profile: PROFILE=\"$PROFILE\": only letters, digits, _ and spaces" >&2
	exit 1 ;;
esac
case $OUT in *[\ ,]*)
	echo "profile: $OUT: QEMU's -plugin takes no space or comma" >&2
	exit 1 ;;
esac
experiment_begin profile "$OUT"
make -s -C "$HERE/.." O="$OUT/build" "$OUT/build/unwind_bench"
strip -o "$G/unwind_bench" "$OUT/build/unwind_bench"
python3 "$HERE/../hide_sframe.py" "$G/unwind_bench"
experiment_guest "$HERE/guest-profile.sh"
printf 'PROFILE="%s"\n' "$PROFILE" >"$G/bench.env"
gcc -O2 -Wall -Wextra -shared -fPIC -o "$OUT/insn_plugin.so" "$HERE/insn_plugin.c"

addr() {
	awk -v s="$1" '$3 == s { print $1; exit }' "$MAP"
}
start=$(addr unwind_user_types) stop=$(addr ktime_get)
[ -n "$start" ] && [ -n "$stop" ] || { echo "profile: no unwind_user_types or ktime_get in $MAP" >&2; exit 1; }
rm -f "$OUT/counts.txt"
GUEST_ACCEL=tcg GUEST_QEMU_EXTRA="-plugin $OUT/insn_plugin.so,start=$start,stop=$stop,out=$OUT/counts.txt" \
	experiment_boot "$BZ" "$TIMEOUT"
grep '^bench: ' "$OUT/run/results.log" || true
[ -s "$OUT/counts.txt" ] || { echo "profile: QEMU wrote no counts (see $OUT/run/qemu.log)" >&2; exit 1; }
experiment_report run_py bench.profile.report "$OUT/counts.txt" "$MAP" \
	--vmlinux "$VMLINUX" ${ANNOTATE:+--annotate "$ANNOTATE"}
