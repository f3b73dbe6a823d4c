#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-arm64: make bench's step and cold phases (bench/guest-bench.sh)
# on arm64. unwind_bench is cross-built by Debian's aarch64 gcc, with frame
# pointers and SFrame (V1, binutils 2.40) as make bench builds it; an
# initramfs of its own with Debian's arm64 busybox; one boot of the
# production arm64 kernel under qemu-system-aarch64 -M virt -cpu max
# (GUEST_ICOUNT: the guest's clock counts instructions); then make bench's
# step table beside x86's (bench/report_arm64.py). The other phases are
# left out: perf, profile and exec need an arm64 perf or the growth
# programs, and the step and cold figures are what is compared.
#
# Usage: run-bench-arm64.sh IMAGE BUSYBOX OUTDIR TIMEOUT
#   BUSYBOX: Debian's static arm64 busybox (harness/arm64-root.sh's).
#   OUTDIR gets build/, guest/, run/ and report.txt, as make bench's.
# Environment: BENCH_ENV, more lines for the guest's bench.env.
set -euo pipefail
IMAGE=$1 BUSYBOX=$2 OUT=$3 TIMEOUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
CC=aarch64-linux-gnu-gcc
# shellcheck source=harness/experiment.sh
. "$HERE/../harness/experiment.sh"

experiment_begin bench "$OUT"

echo "bench-arm64: building unwind_bench with $CC in $OUT/build"
make -s -C "$HERE" O="$OUT/build" CC="$CC" "$OUT/build/unwind_bench"
aarch64-linux-gnu-strip -o "$G/unwind_bench" "$OUT/build/unwind_bench"
python3 "$HERE/hide_sframe.py" "$G/unwind_bench"
experiment_guest "$HERE/guest-bench.sh"
printf '%s\n' 'PHASES="step cold"' "${BENCH_ENV:-}" >"$G/bench.env"

export GUEST_ARCH=arm64 GUEST_BUSYBOX=$BUSYBOX
experiment_boot "$IMAGE" "$TIMEOUT"
experiment_report run_py bench.report_arm64 --results "$OUT/run/results.log" \
	--build "$OUT/build" --accel "$OUT/run/accel" --seconds "$EXPERIMENT_SECONDS" \
	--config "$(dirname "$IMAGE")/../../../.config" --x86 "$HERE/RESULTS.md"
