#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make oracle: three unmodified Debian programs (xz, sqlite3, python3.11),
# each profiled once in the guest with both the kernel's user stack
# (SFrame, every object registered by the LD_AUDIT module with a section
# sframe-synth made from its .eh_frame) and perf's DWARF unwinding of the
# same sample's stack copy (demo/guest-oracle.sh); demo/oracle.py compares
# them sample by sample. The staging, the boot and the report are
# harness/experiment.sh's.
#
# Also the start-up time the LD_AUDIT module adds to a program with many
# libraries.
#
# Usage: run-oracle.sh BZIMAGE PERF_BINARY OUTDIR TIMEOUT
# Environment: ORACLE_FREQ, perf record -F (500).
set -euo pipefail
BZ=$1 PERF=$2 OUT=$3 TIMEOUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=harness/experiment.sh
. "$HERE/../harness/experiment.sh"

PROGS=(/usr/bin/xz /usr/bin/sqlite3 /usr/bin/python3.11)
# Start-up cost of the LD_AUDIT module: a program with more than 20
# libraries (curl: 33 objects), started again and again.
STARTUP=(/usr/bin/curl)
# What CPython needs to start with -S (no site): the modules it imports
# before running the script, and os.py, its landmark for sys.prefix.
PYLIB=/usr/lib/python3.11
PYFILES=("$PYLIB"/{abc,codecs,io,os,zipimport}.py "$PYLIB"/encodings/{__init__,aliases,utf_8}.py
	"$PYLIB"/importlib/_bootstrap_external.py)

experiment_begin oracle "$OUT"
experiment_perf "$PERF"
experiment_guest "$HERE/guest-oracle.sh"
# Every object the programs load: the programs, their libraries, ld.so
# (also under its name in the library path: the module's DT_NEEDED names
# it, and ld.so finds itself for the audit namespace by that file).
mapfile -t OBJS < <(printf '%s\n' "${PROGS[@]}" "${STARTUP[@]}" /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
	ldd "${PROGS[@]}" "${STARTUP[@]}" | grep -o '/[^ ]*' | grep -v ':$' | sort -u)
"$REPO/harness/stage-audit.sh" "$G" "-I$REPO/include/uapi" "${OBJS[@]}" >"$OUT/synth.txt"
printf '%s\n' "${OBJS[@]}" "${PYFILES[@]}" >"$G/extra-libs"
printf "ORACLE_FREQ=%s\n" "${ORACLE_FREQ:-500}" >"$G/oracle.env"

experiment_boot "$BZ" "$TIMEOUT"
experiment_report run_py demo.oracle "$OUT/run/results.log" "$OUT"
