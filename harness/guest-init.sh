#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the test guest.  The kernel console is ttyS0 (arm64: ttyAMA0);
# everything the tests print goes to ttyS1 (arm64: hvc0, harness_out=), which
# the host keeps in results.log.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/selftests
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /tmp
mode=$(sed -n 's/.*harness=\([a-z]*\).*/\1/p' /proc/cmdline)
# The results port: ttyS1, or what the command line names (arm64's virt
# machine has one UART, and a virtio console, which may come up after
# /init starts).
out=/dev/$(sed -n 's/.*harness_out=\([a-z0-9]*\).*/\1/p' /proc/cmdline)
[ "$out" = /dev/ ] && out=/dev/ttyS1
i=0
while [ ! -c "$out" ] && [ $i -lt 30 ]; do
	sleep 1
	i=$((i + 1))
done

run_selftests() {
	for t in $(cat /selftests/list); do
		echo "### selftest $t"
		# Each test binary is bounded; a hang shows as exit 143 (TERM).
		# sframe_file_test's tests take about 5 minutes together.
		timeout 600 /selftests/$t 2>&1
		echo "### exit $t $?"
	done
}

case "$mode" in
probe)
	echo "guest: probe ok" >$out
	;;
shell)
	echo "guest: shell; tests are in /selftests; 'poweroff -f' to leave"
	setsid cttyhack sh
	;;
test)
	{
		echo "guest: start $(uname -r)"
		run_selftests
		if [ -e /sys/kernel/debug/kmemleak ]; then
			echo scan >/sys/kernel/debug/kmemleak
			echo "### kmemleak"
			cat /sys/kernel/debug/kmemleak
			echo "### kmemleak end"
		fi
		echo "guest: done"
	} >$out 2>&1
	;;
experiment)
	# make demo, oracle, bench: the guest script harness/experiment.sh
	# staged, named in /selftests/experiment.
	{
		s=$(cat /selftests/experiment 2>/dev/null)
		if [ -n "$s" ] && [ -x "/selftests/$s" ]; then
			"/selftests/$s"
		fi
		echo "guest: done"
	} >$out 2>&1
	;;
esac
sync
poweroff -f
