# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# Sourced (busybox sh) by the experiments' guest scripts, which /init runs
# in experiment mode (demo/guest-demo.sh, demo/guest-oracle.sh,
# bench/guest-bench.sh, installed in /selftests under their own names
# with this file beside them): what they all do first, and the one format
# of the blocks the host reads with harness/guestlog.py.
D=/selftests
export HOME=/tmp PATH="$D:$PATH"
cd /tmp || exit 1

# guest_perf_setup: perf sees the kernel's symbols and may sample anything.
guest_perf_setup() {
	echo 0 >/proc/sys/kernel/kptr_restrict 2>/dev/null
	echo -1 >/proc/sys/kernel/perf_event_paranoid 2>/dev/null
}

# guest_block TAG NAME [FILE]: FILE (else standard input), gzip + base64,
# between the lines "### TAG NAME begin" and "### TAG NAME end".
guest_block() {
	echo "### $1 $2 begin"
	if [ $# -ge 3 ]; then
		gzip -c "$3"
	else
		gzip -c
	fi | base64
	echo "### $1 $2 end"
}
