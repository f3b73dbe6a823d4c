#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make oracle: three unmodified Debian programs (xz, sqlite3, python3.11),
# each profiled once in the guest with both the kernel's user stack
# (SFrame, every object registered by the LD_AUDIT module with a section
# sframe-synth made from its .eh_frame) and perf's DWARF unwinding of the
# same sample's stack copy (demo/guest-oracle.sh); demo/oracle.py compares
# them sample by sample.
#
# Also the start-up time the LD_AUDIT module adds to a program with many
# libraries.
#
# Usage: run-oracle.sh BZIMAGE PERF_BINARY OUTDIR TIMEOUT
# Environment: ORACLE_FREQ, perf record -F (500).
set -euo pipefail
BZ=$1 PERF=$2 OUT=$3 TIMEOUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
G=$OUT/guest/selftests
export PATH=$HOME/.cargo/bin:$PATH

PROGS=(/usr/bin/xz /usr/bin/sqlite3 /usr/bin/python3.11)
# Start-up cost of the LD_AUDIT module: a program with more than 20
# libraries (curl: 33 objects), started again and again.
STARTUP=(/usr/bin/curl)
# What CPython needs to start with -S (no site): the modules it imports
# before running the script, and os.py, its landmark for sys.prefix.
PYLIB=/usr/lib/python3.11
PYFILES=("$PYLIB"/{abc,codecs,io,os,zipimport}.py "$PYLIB"/encodings/{__init__,aliases,utf_8}.py
	"$PYLIB"/importlib/_bootstrap_external.py)

rm -rf "$OUT/guest"
mkdir -p "$G"
strip --strip-debug -o "$G/perf" "$PERF"
install -m 755 "$HERE/guest-oracle.sh" "$G/demo.sh"
make -s -C "$REPO/tools/unwind_user/audit" OUTPUT="$G/" KHDR_INCLUDES="-I$REPO/include/uapi"
(cd "$REPO/tools/unwind_user/sframe_synth" && cargo build --release -q)
# Every object the programs load: the programs, their libraries, ld.so
# (also under its name in the library path: the module's DT_NEEDED names
# it, and ld.so finds itself for the audit namespace by that file).
mapfile -t OBJS < <(printf '%s\n' "${PROGS[@]}" "${STARTUP[@]}" /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
	ldd "${PROGS[@]}" "${STARTUP[@]}" | grep -o '/[^ ]*' | grep -v ':$' | sort -u)
"$REPO/tools/unwind_user/sframe_synth/target/release/sframe-synth" \
	--cache "$G/sframe-cache" "${OBJS[@]}" >"$OUT/synth.txt"
printf '%s\n' "${OBJS[@]}" "${PYFILES[@]}" >"$G/extra-libs"
printf "ORACLE_FREQ=%s\n" "${ORACLE_FREQ:-500}" >"$G/oracle.env"
"$REPO/harness/mkinitramfs.sh" "$OUT/guest" "$OUT/initramfs.cpio.gz"

start=$(date +%s)
rc=0
"$REPO/harness/run-guest.sh" "$BZ" "$OUT/initramfs.cpio.gz" "$OUT/run" demo "$TIMEOUT" || rc=$?
echo "oracle: guest ran $(($(date +%s) - start)) s (exit $rc), logs in $OUT/run"
if ! grep -q '### oracle-end' "$OUT/run/results.log" 2>/dev/null; then
	echo "oracle: the guest did not finish; tail of $OUT/run/console.log:" >&2
	tail -20 "$OUT/run/console.log" >&2
	exit 1
fi
PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" python3 -m demo.oracle "$OUT/run/results.log" "$OUT" | tee "$OUT/report.txt"
exit "${PIPESTATUS[0]}"
