# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The one job of make demo, make oracle and make bench: stage a guest,
# boot it, collect its results.log, report. Sourced (bash, set -euo
# pipefail) by their host scripts, demo/run-demo.sh, demo/run-oracle.sh
# and bench/run-bench.sh, which stage what is their own between
# experiment_begin and experiment_boot:
#
#   experiment_begin NAME OUTDIR
#       a new staging tree $G (OUTDIR/guest/selftests, the guest's
#       /selftests); NAME names the outputs and the guest's end marker
#   experiment_guest SCRIPT
#       the guest side, installed under its own name beside
#       harness/guest-lib.sh; /init runs it in experiment mode
#   experiment_perf PERF
#       the perf binary, without its debug info (the symbol table is
#       enough; the initramfs stays small)
#   experiment_boot BZIMAGE TIMEOUT
#       the initramfs (harness/mkinitramfs.sh), one boot
#       (harness/run-guest.sh) with its logs in OUTDIR/run; exits 1 unless
#       the guest printed "### NAME-end" to results.log. Sets
#       EXPERIMENT_SECONDS, from experiment_begin to the guest's end.
#   experiment_report COMMAND...
#       the host's report, printed and kept in OUTDIR/report.txt; exits
#       with its status
#   run_py MODULE ARGS...
#       python3 -m MODULE, the repository's top directory as module path
#       (harness/__init__.py)
#
# The LD_AUDIT module and its cache: harness/stage-audit.sh.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

run_py() {
	PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" python3 -m "$@"
}

experiment_begin() {
	EXPERIMENT=$1 EXPERIMENT_OUT=$2
	EXPERIMENT_T0=$(date +%s)
	G=$EXPERIMENT_OUT/guest/selftests
	mkdir -p "$EXPERIMENT_OUT"
	rm -rf "$EXPERIMENT_OUT/guest"
	mkdir -p "$G"
}

experiment_guest() {
	install -m 755 "$1" "$G/"
	install -m 644 "$REPO/harness/guest-lib.sh" "$G/"
	# What /init runs (harness/guest-init.sh).
	basename "$1" >"$G/experiment"
}

experiment_perf() {
	strip --strip-debug -o "$G/perf" "$1"
}

experiment_boot() {
	local bz=$1 timeout=$2 out=$EXPERIMENT_OUT rc=0 t1 t2
	"$REPO/harness/mkinitramfs.sh" "$out/guest" "$out/initramfs.cpio.gz"
	t1=$(date +%s)
	"$REPO/harness/run-guest.sh" "$bz" "$out/initramfs.cpio.gz" "$out/run" experiment "$timeout" || rc=$?
	t2=$(date +%s)
	# shellcheck disable=SC2034 # for the sourcing script
	EXPERIMENT_SECONDS=$((t2 - EXPERIMENT_T0))
	echo "$EXPERIMENT: staged in $((t1 - EXPERIMENT_T0)) s, guest ran $((t2 - t1)) s (exit $rc), logs in $out/run"
	if ! grep -q "### $EXPERIMENT-end" "$out/run/results.log" 2>/dev/null; then
		echo "$EXPERIMENT: the guest did not finish; tail of $out/run/console.log and results.log:" >&2
		tail -20 "$out/run/console.log" >&2 || true
		tail -5 "$out/run/results.log" >&2 || true
		exit 1
	fi
}

experiment_report() {
	local rc=0
	"$@" | tee "$EXPERIMENT_OUT/report.txt" || rc=$?
	exit "$rc"
}
