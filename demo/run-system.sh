#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make system: a guest whose unmodified Debian programs (python3.11,
# sqlite3, xz, a setuid copy of xz run by an unprivileged user, a shell
# loop of short-lived xz) were all started before profiling, profiled as
# a whole before and after one run of the agent (sframe-synth attach
# --running) with the kernel's user stack and perf's DWARF unwind of the
# same sample's stack copy (demo/guest-system.sh); demo/system.py
# compares them sample by sample, per program. The staging, the boot and
# the report are harness/experiment.sh's.
#
# Usage: run-system.sh BZIMAGE PERF_BINARY OUTDIR TIMEOUT
# Environment: SYSTEM_FREQ (perf record -F, 100), SYSTEM_SECONDS (each
# recording's length, 8); SYSTEM_BEFORE=0 skips the recording before the
# agent, SYSTEM_STARTUP=0 curl's start-up, SYSTEM_FP=0 the fp,defer
# recording (figures only: make check skips them), SYSTEM_STARTUP_RUNS
# curl's starts timed together (10); SYSTEM_BUILD=1 adds a build (gcc -c
# again and again) to the late programs and 40 s to their recording
# (figures only: cc1's table takes longer to make under TCG than make
# check's recording lasts).
set -euo pipefail
BZ=$1 PERF=$2 OUT=$3 TIMEOUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=harness/experiment.sh
. "$HERE/../harness/experiment.sh"

PROGS=(/usr/bin/xz /usr/bin/sqlite3 /usr/bin/python3.11 /usr/bin/curl /usr/bin/bzip2 /usr/bin/zstd)
[ "${SYSTEM_BUILD:-0}" = 1 ] && PROGS+=(/usr/bin/gcc "$(gcc -print-prog-name=cc1)" /usr/bin/as)
# What CPython needs to start with -S (as demo/run-oracle.sh).
PYLIB=/usr/lib/python3.11
PYFILES=("$PYLIB"/{abc,codecs,io,os,zipimport}.py "$PYLIB"/encodings/{__init__,aliases,utf_8}.py
	"$PYLIB"/importlib/_bootstrap_external.py)
# What the late phase's python3.11 imports (and their libraries).
PYEXT=("$PYLIB"/lib-dynload/{_bz2,_lzma,_hashlib,_uuid}.cpython-311-x86_64-linux-gnu.so)

experiment_begin system "$OUT"
experiment_perf "$PERF"
experiment_guest "$HERE/guest-system.sh"
# The agent, as an administrator installs it.
(cd "$REPO/tools/unwind_user/sframe_synth" && PATH=$HOME/.cargo/bin:$PATH cargo build --release -q)
cp "$REPO/tools/unwind_user/sframe_synth/target/release/sframe-synth" "$G/"
cp "$HERE/pylate.py" "$G/"
printf '%s\n' "${PROGS[@]}" "${PYFILES[@]}" "${PYEXT[@]}" >"$G/extra-libs"
# What curl maps: the objects whose tables make system-startup's difference.
ldd /usr/bin/curl | grep -o '/[^ ]*' | grep -v ':$' | sort -u >"$G/curl-objects"
printf "SYSTEM_FREQ=%s\nSYSTEM_SECONDS=%s\nSYSTEM_BEFORE=%s\nSYSTEM_STARTUP=%s\nSYSTEM_STARTUP_RUNS=%s\nSYSTEM_FP=%s\nSYSTEM_BUILD=%s\n" \
	"${SYSTEM_FREQ:-100}" "${SYSTEM_SECONDS:-8}" "${SYSTEM_BEFORE:-1}" "${SYSTEM_STARTUP:-1}" \
	"${SYSTEM_STARTUP_RUNS:-10}" "${SYSTEM_FP:-1}" "${SYSTEM_BUILD:-0}" >"$G/system.env"

experiment_boot "$BZ" "$TIMEOUT"
experiment_report run_py demo.system "$OUT/run/results.log" "$OUT"
