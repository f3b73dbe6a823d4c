#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: build the benchmark programs (bench/Makefile) and the demo
# workload, put them and perf into an initramfs of their own, boot the test
# kernel once, run bench/guest-bench.sh in the guest, check vmlinux for
# allocations on the unwind path, and report (bench/report.py).
#
# Usage: run-bench.sh BZIMAGE PERF_BINARY OUTDIR TIMEOUT [VMLINUX]
#   OUTDIR gets build/ (the programs), guest/ (the initramfs tree), run/
#   (console.log, results.log, accel), noalloc.txt, the perf script outputs
#   and results.md, the table that is also printed.
# Environment: KSRC, the kernel source tree (for its Debian version, if it
#   has one); BENCH_ENV, lines for the guest's bench.env (e.g.
#   "PERF_SECONDS=8"), overriding its defaults.
set -euo pipefail
BZ=$1 PERF=$2 OUT=$3 TIMEOUT=$4
VMLINUX=${5:-$(cd "$(dirname "$BZ")/../../.." && pwd)/vmlinux}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
G=$OUT/guest/selftests
mkdir -p "$OUT"
t0=$(date +%s)

echo "bench: building the programs in $OUT/build (100k functions: a few minutes the first time)"
make -s -C "$HERE" O="$OUT/build" -j"$(nproc)"
rm -rf "$OUT/guest"
mkdir -p "$G"
make -s -C "$REPO/demo" O="$G" >/dev/null
make -s -C "$REPO/demo" O="$G/fp" FRAME=fp >/dev/null
# The guest gets stripped copies; the host keeps the symbols for report.py.
for p in unwind_bench growth_10 growth_100 growth_1000 growth_10000 growth_100000; do
	strip -o "$G/$p" "$OUT/build/$p"
done
# The exec-cost baseline: the same programs with the .sframe section header
# removed (PT_GNU_SFRAME then empty: binfmt_elf registers nothing).
for p in growth_10000 growth_100000; do
	strip --remove-section=.sframe -o "$G/${p}_nosframe" "$OUT/build/$p"
done
strip --strip-debug -o "$G/perf" "$PERF"
install -m 755 "$HERE/guest-bench.sh" "$G/demo.sh"
printf '%s\n' "${BENCH_ENV:-}" >"$G/bench.env"
"$REPO/harness/mkinitramfs.sh" "$OUT/guest" "$OUT/initramfs.cpio.gz" >/dev/null
t1=$(date +%s)

rc=0
"$REPO/harness/run-guest.sh" "$BZ" "$OUT/initramfs.cpio.gz" "$OUT/run" demo "$TIMEOUT" || rc=$?
t2=$(date +%s)
echo "bench: build $((t1 - t0)) s, guest $((t2 - t1)) s (exit $rc), logs in $OUT/run"
if ! grep -q '### bench-end' "$OUT/run/results.log" 2>/dev/null; then
	echo "bench: the guest did not finish; tail of $OUT/run/console.log and results.log:" >&2
	tail -20 "$OUT/run/console.log" >&2
	tail -5 "$OUT/run/results.log" >&2 || true
	exit 1
fi

if [ -f "$VMLINUX" ]; then
	PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" python3 -m bench.noalloc "$VMLINUX" >"$OUT/noalloc.txt" || true
else
	echo "noalloc: not run: no vmlinux at $VMLINUX" >"$OUT/noalloc.txt"
fi

kver=$(file -b "$BZ" | sed -n 's/.*version \([^,]*\),.*/\1/p')
[ -n "${KSRC:-}" ] && [ -f "$KSRC/.debian-version" ] && kver="$kver; $(cat "$KSRC/.debian-version")"
PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" python3 -m bench.report --results "$OUT/run/results.log" --out "$OUT" \
	--build "$OUT/build" --accel "$OUT/run/accel" --noalloc "$OUT/noalloc.txt" \
	--kernel "$kver" --seconds "$((t2 - t0))" --config "$(dirname "$VMLINUX")/.config"
