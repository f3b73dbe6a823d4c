#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make vng: boot the kernel with virtme-ng and run the installed kselftests
# in it with run_kselftest.sh (harness/vng-guest.sh), then summarise.
#
# The guest sees the host's root read-only over 9p (--force-9p: Debian 12
# has no virtiofsd that vng can drive). The kselftest TAP (vng's stdout) is
# shown and kept in OUTDIR/results.log; the kernel console (vng --verbose,
# on stderr) goes to OUTDIR/console.log.
#
# Usage: run-vng.sh VENV BZIMAGE KSELFTEST_DIR OUTDIR TIMEOUT TEST_TIMEOUT [ARGS...]
#   TIMEOUT bounds the whole boot, TEST_TIMEOUT each test program; ARGS
#   (words without quotes) go to run_kselftest.sh in the guest.
#   VNG_ACCEL=kvm|tcg (default tcg): vng without or with --disable-kvm.
#   Exit status: 0 if every test passed and the kernel log is clean.
set -uo pipefail
VENV=$1 BZ=$2 KSFT=$3 OUT=$4 TIMEOUT=$5 TEST_TIMEOUT=$6
shift 6
HERE=$(cd "$(dirname "$0")" && pwd)
ACCEL=${VNG_ACCEL:-tcg}
# vng runs virtme-run, its other half, from PATH.
export PATH=$VENV/bin:$PATH
mkdir -p "$OUT"
rm -f "$OUT/console.log" "$OUT/results.log" "$OUT/rc" "$OUT/seconds"

# root=/dev/root: vng names its 9p root by the mount tag /dev/root and
# leaves root= out, which only a kernel with CONFIG_BLOCK gets right (it
# tries every filesystem on "/dev/root"); ours has no block layer, and
# without root= the kernel mounts 9p with an empty source.
# rootflags: vng's, and cache=loose (the last rootflags= wins): the guest
# keeps what it read of the read-only root instead of asking the host
# again at every exec and open; under TCG that took a quarter less CPU
# time for the whole run (255 against 335 s) and halved the time vng's
# init spends before the tests.
ROOTFLAGS=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose
VNG=("$VENV/bin/vng" --run "$BZ" --force-9p --user root --cpus 2 --memory 2G --verbose
	--append "root=/dev/root rootflags=$ROOTFLAGS oops=panic")
[ "$ACCEL" = kvm ] || VNG+=(--disable-kvm)
VNG+=(--exec "$HERE/vng-guest.sh $KSFT $TEST_TIMEOUT $*")

echo "run-vng: virtme-ng $("$VENV/bin/vng" --version | sed 's/.* //'), $ACCEL," \
	"timeout ${TIMEOUT}s, logs in $OUT" >&2
start=$(date +%s.%N)
timeout --foreground -k 10 "$TIMEOUT" "${VNG[@]}" </dev/null 2>"$OUT/console.log" |
	tee "$OUT/results.log"
rc=${PIPESTATUS[0]}
end=$(date +%s.%N)
echo "$rc" >"$OUT/rc"
echo "$start $end" | awk '{printf "%.1f\n", $2 - $1}' >"$OUT/seconds"
echo "run-vng: vng exited with $rc after $(cat "$OUT/seconds") s" >&2
PYTHONPATH="$(dirname "$HERE")${PYTHONPATH:+:$PYTHONPATH}" python3 -m harness.vng_summary "$OUT"
