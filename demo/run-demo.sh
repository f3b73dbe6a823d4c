#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: build the workload, put it and perf into an initramfs of its
# own, boot the test kernel, profile the workloads inside the guest
# (demo/guest-demo.sh) and report on the host (demo/report.py); the
# staging, the boot and the report are harness/experiment.sh's.
#
# Usage: run-demo.sh BZIMAGE PERF_BINARY OUTDIR TIMEOUT
#   OUTDIR gets guest/ (the initramfs tree), run/ (console.log, results.log),
#   the flame graphs, the perf script outputs and report.txt.
# Environment: DEMO_SECONDS, seconds the workload runs per profile (8);
# DEMO_FREQ, perf record -F (4000); DEMO_MODES, only these rows (e.g. "lua");
# DEMO_KEEP_DATA=1, also perf.data and perf maps in results.log;
# PYTORTURE_SECONDS, how long the Python torture run lasts (60);
# PYCOST_ROUNDS, rounds of the Python cost row (200 with GUEST_ICOUNT, else
# 0: no cost row).
set -euo pipefail
BZ=$1 PERF=$2 OUT=$3 TIMEOUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=harness/experiment.sh
. "$HERE/../harness/experiment.sh"
export PATH=$HOME/.cargo/bin:$PATH

experiment_begin demo "$OUT"
# Flame graphs: inferno if it can be had, else report.py draws its own.
if ! command -v inferno-flamegraph >/dev/null 2>&1 && command -v cargo >/dev/null 2>&1; then
	echo "demo: cargo install inferno (once)"
	cargo install --quiet --locked inferno >"$OUT/inferno-install.log" 2>&1 ||
		echo "demo: inferno did not install (see $OUT/inferno-install.log); using the built-in SVG renderer"
fi

make -s -C "$HERE" O="$G"
experiment_perf "$PERF"
experiment_guest "$HERE/guest-demo.sh"
# The audit rows: the sections sframe-synth makes for the host's libc and
# ld.so, and for perf's libraries (perf runs with the module too:
# guest-demo.sh). The guest gets the same files (extra-libs; ld.so also
# under its name in the library path: the module's DT_NEEDED names it,
# and ld.so finds itself for the audit namespace by that file).
LIBS=(/lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
LIBS+=($(ldd "$G/perf" | grep -o '/lib/x86_64-linux-gnu/lib[^ ]*' | grep -v '/libc\.so\.6$'))
# The interpreter rows: Debian's lua5.4, its libraries' sections too, and
# the module that answers user-assisted unwinding requests, built against
# Debian's source of the same Lua (cached in $KBUILD_DIR/lua-src).
if [ -x /usr/bin/lua5.4 ]; then
	cp /usr/bin/lua5.4 "$G/lua5.4"
	install -m 644 "$HERE/interp.lua" "$G/interp.lua"
	make -s -C "$REPO/tools/unwind_user/lua" OUTPUT="$G/" \
		LUA_DIR="$(dirname "$OUT")/lua-src" KHDR_INCLUDES="-I$REPO/include/uapi"
	LIBS+=(/usr/bin/lua5.4 $(ldd /usr/bin/lua5.4 | grep -o '/lib/x86_64-linux-gnu/lib[^ ]*'))
fi
# The Python rows: Debian's python3.11 running pywork.py (and the torture
# script), the files of its standard library they import (found by running
# them here), and tools/unwind_user/python's extension, built against
# Debian's python3.11-dev.
PYFILES=()
if [ -x /usr/bin/python3.11 ]; then
	install -m 644 "$HERE/pywork.py" "$HERE/pytorture.py" "$G/"
	make -s -C "$REPO/tools/unwind_user/python" OUTPUT="$G/pyassist/" \
		KHDR_INCLUDES="-I$REPO/include/uapi"
	: >"$OUT/pyfiles"
	(cd "$OUT" && PYTHONPATH="$G/pyassist" /usr/bin/python3.11 -S "$HERE/pymodules.py" \
		"$OUT/pyfiles" -m unwind_assist "$HERE/pywork.py" 0.2 &&
		/usr/bin/python3.11 -S "$HERE/pymodules.py" "$OUT/pyfiles" \
		"$HERE/pytorture.py" 0.2) >"$OUT/pyfiles.log" 2>&1
	# With Debian's compiled modules: compiling them would be most of the
	# guest's time (mkinitramfs keeps the timestamps the .pyc check needs).
	for f in $(sort -u "$OUT/pyfiles"); do
		c=$(dirname "$f")/__pycache__/$(basename "${f%.py}").cpython-311.pyc
		[ "${f%.py}" != "$f" ] && [ -f "$c" ] && echo "$c"
		echo "$f"
	done >"$OUT/pyfiles.all"
	mapfile -t PYFILES <"$OUT/pyfiles.all"
	PYSO=$(printf '%s\n' "${PYFILES[@]}" | grep '\.so$' || true)
	LIBS+=(/usr/bin/python3.11 $(ldd /usr/bin/python3.11 | grep -o '/lib/x86_64-linux-gnu/lib[^ ]*') $PYSO)
fi
SYNTH=("${LIBS[@]}")
[ -f "$G/unwind_assist.so" ] && SYNTH+=("$G/unwind_assist.so")
for so in "$G"/pyassist/unwind_assist/*.so; do
	[ -f "$so" ] && SYNTH+=("$so")
done
SYNTH+=("$G/perf")
"$REPO/harness/stage-audit.sh" "$G" "-I$REPO/include/uapi" "${SYNTH[@]}" >/dev/null
{
	printf '%s\n' "${LIBS[@]}" | grep -v '^/usr/bin/lua'
	printf '%s\n' "${PYFILES[@]}" | grep -v '\.so$'
} | sort -u >"$G/extra-libs"
# The Python cost row only where the guest's clock counts instructions:
# under plain TCG a system call costs milliseconds, and the row says nothing.
[ -n "${GUEST_ICOUNT:-}" ] && pycost=200 || pycost=0
printf "DEMO_SECONDS=%s\nDEMO_FREQ=%s\nDEMO_MODES='%s'\nDEMO_KEEP_DATA=%s\nPYTORTURE_SECONDS=%s\nPYCOST_ROUNDS=%s\n" \
	"${DEMO_SECONDS:-8}" "${DEMO_FREQ:-4000}" "${DEMO_MODES:-}" "${DEMO_KEEP_DATA:-}" \
	"${PYTORTURE_SECONDS:-60}" "${PYCOST_ROUNDS:-$pycost}" >"$G/demo.env"

experiment_boot "$BZ" "$TIMEOUT"
experiment_report run_py demo.report "$OUT/run/results.log" "$OUT"
