#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: build the benchmark programs (bench/Makefile) and the demo
# workload, put them and perf into an initramfs of their own, boot the test
# kernel once, run bench/guest-bench.sh in the guest, check vmlinux for
# allocations on the unwind path, and report (bench/report.py); the
# staging, the boot and the report are harness/experiment.sh's.
#
# Usage: run-bench.sh BZIMAGE PERF_BINARY OUTDIR TIMEOUT [VMLINUX]
#   OUTDIR gets build/ (the programs), guest/ (the initramfs tree), run/
#   (console.log, results.log, accel), noalloc.txt, the perf script outputs
#   and results.md, the table that is also printed (and kept with the
#   summary lines in report.txt).
# Environment: KSRC, the kernel source tree (for its Debian version, if it
#   has one); BENCH_ENV, lines for the guest's bench.env (e.g.
#   "PERF_SECONDS=8"), overriding its defaults.
set -euo pipefail
BZ=$1 PERF=$2 OUT=$3 TIMEOUT=$4
VMLINUX=${5:-$(cd "$(dirname "$BZ")/../../.." && pwd)/vmlinux}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=harness/experiment.sh
. "$HERE/../harness/experiment.sh"

experiment_begin bench "$OUT"
echo "bench: building the programs in $OUT/build (100k functions: a few minutes the first time)"
make -s -C "$HERE" O="$OUT/build" -j"$(nproc)"
make -s -C "$REPO/demo" O="$G" >/dev/null
make -s -C "$REPO/demo" O="$G/fp" FRAME=fp >/dev/null
# The guest gets stripped copies; the host keeps the symbols for report.py.
# Their PT_GNU_SFRAME is hidden from the kernel (bench/hide_sframe.py): each
# measurement registers what it measures.
for p in unwind_bench growth_10 growth_100 growth_1000 growth_10000 growth_100000; do
	strip -o "$G/$p" "$OUT/build/$p"
	python3 "$HERE/hide_sframe.py" "$G/$p"
done
# What exec pays for a file's section: the programs as built (a real
# PT_GNU_SFRAME, which exec reads nothing of), against the same with the
# .sframe section header removed (PT_GNU_SFRAME then empty).
for p in growth_26214 growth_419430; do
	strip -o "$G/${p}_sframe" "$OUT/build/$p"
	strip --remove-section=.sframe -o "$G/${p}_nosframe" "$OUT/build/$p"
done
experiment_perf "$PERF"
experiment_guest "$HERE/guest-bench.sh"
printf '%s\n' "${BENCH_ENV:-}" >"$G/bench.env"

experiment_boot "$BZ" "$TIMEOUT"
if [ -f "$VMLINUX" ]; then
	run_py bench.noalloc "$VMLINUX" >"$OUT/noalloc.txt" || true
else
	echo "noalloc: not run: no vmlinux at $VMLINUX" >"$OUT/noalloc.txt"
fi
kver=$(file -b "$BZ" | sed -n 's/.*version \([^,]*\),.*/\1/p')
[ -n "${KSRC:-}" ] && [ -f "$KSRC/.debian-version" ] && kver="$kver; $(cat "$KSRC/.debian-version")"
experiment_report run_py bench.report --results "$OUT/run/results.log" --out "$OUT" \
	--build "$OUT/build" --accel "$OUT/run/accel" --noalloc "$OUT/noalloc.txt" \
	--kernel "$kver" --seconds "$EXPERIMENT_SECONDS" --config "$(dirname "$VMLINUX")/.config"
