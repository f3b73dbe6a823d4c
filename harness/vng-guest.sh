#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make vng, inside the guest: what vng --exec runs. The guest's root is the
# host's, read-only over 9p, with virtme-ng-init's tmpfs and overlays on
# top, so the installed kselftests are at the same path as on the host.
# Mounts what the tests need that vng's init does not mount itself (the
# busybox guest's /init mounts the same), runs run_kselftest.sh, then
# asks kmemleak for a scan (its report goes to the kernel log).
#
# Usage: vng-guest.sh KSELFTEST_DIR TIMEOUT [RUN_KSELFTEST_ARGS...]
#   TIMEOUT: seconds each test may run (run_kselftest.sh --override-timeout);
#   the other arguments go to run_kselftest.sh (-t unwind_user:NAME, ...).
#   Exit status: run_kselftest.sh's (non-zero if a test failed).
set -u
KSFT=$1 TIMEOUT=$2
shift 2

mnt() {
	grep -q " $2 $1 " /proc/mounts || mount -t "$1" "$1" "$2"
}
mnt debugfs /sys/kernel/debug
mnt cgroup2 /sys/fs/cgroup
mnt tmpfs /tmp

echo "vng-guest: $(uname -r), $(nproc) CPUs, root on $(awk '$2 == "/" {print $3}' /proc/mounts)" >&2
cd "$KSFT" || exit 1
./run_kselftest.sh --override-timeout "$TIMEOUT" "$@"
rc=$?

if [ -e /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	echo "# vng-guest: kmemleak: $(grep -c '^unreferenced object' /sys/kernel/debug/kmemleak) unreferenced objects"
	cat /sys/kernel/debug/kmemleak >&2
fi
exit $rc
