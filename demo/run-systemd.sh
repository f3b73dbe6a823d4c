#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make systemd: the provider's unit (tools/unwind_user/sframe_synth/systemd/
# sframe-synth.service) on a Debian 12 machine that boots with systemd as
# PID 1, on the test kernel plus harness/configs/systemd.config.
#
# The root is a directory of the host, shared with the guest over 9p
# (virtio-pci): a debootstrap'ed bookworm, made once and kept in
# WORKDIR/base, copied to WORKDIR/root for each run (as
# harness/fresh-root.sh does), so that nothing is packed per run and the
# guest leaves its files where the host can read them. An initramfs would
# hold the 300 MB root in the guest's memory and unpack it at every boot;
# an ext4 image on virtio-blk would need mkfs and a loop of its own. Into
# the copy go sframe-synth as /usr/local/bin/sframe-synth, its unit file
# unchanged in /etc/systemd/system, enabled (systemctl enable in a chroot,
# the multi-user.target.wants link), perf, and the test unit
# demo/sframe-synth-test.service with its script demo/guest-systemd.sh,
# which reports on the second serial port and powers the guest off.
# demo/systemd.py reads what it printed.
#
# Usage: run-systemd.sh BZIMAGE PERF_BINARY WORKDIR TIMEOUT
#   WORKDIR/base        the debootstrap result (read-only use), made if missing
#   WORKDIR/root        this run's copy, left after the run for a look
#   WORKDIR/run         console.log (ttyS0: kernel and systemd), results.log
#                       (ttyS1: the test), qemu.log
#   WORKDIR/report.txt  the host's report; journal.txt and dmesg.txt from
#                       the guest; systemd-examples.txt
# Environment: GUEST_ACCEL (kvm or tcg; default: make check's probe, else
# tcg), GUEST_MEM (2G), LATE_SECONDS (how long the late programs run
# once the provider answered for them, before it is killed and after its
# successor answered, 12).
set -euo pipefail
BZ=$1 PERF=$2 WORK=$3 TIMEOUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
BASE=$WORK/base ROOT=$WORK/root RUN=$WORK/run
T0=$(date +%s)
mkdir -p "$WORK"
[ "$(id -u)" = 0 ] || { echo "systemd: run as root (debootstrap, chroot, the root's owners)" >&2; exit 1; }

# systemd and udev (the device units of the serial ports the getty and the
# test use), dbus (systemctl's and logind's bus, as on any Debian
# machine); perf's libraries; the late programs.
PKGS=systemd,systemd-sysv,udev,dbus,python3,bzip2,xz-utils,zstd,libelf1,libdw1
if [ ! -f "$BASE/.complete" ] || [ "$(cat "$BASE/.complete")" != "$PKGS" ]; then
	rm -rf "$BASE"
	echo "systemd: debootstrap bookworm into $BASE"
	debootstrap --variant=minbase --include="$PKGS" bookworm "$BASE" \
		http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 ||
		{ tail -20 "$WORK/debootstrap.log"; exit 1; }
	# The apt configuration of this workplace (harness/fresh-root.sh):
	# the guest installs nothing, but a look into its root should find
	# the same apt as the host's.
	cp /etc/apt/apt.conf.d/* "$BASE/etc/apt/apt.conf.d/"
	echo "$PKGS" >"$BASE/.complete"
fi
T1=$(date +%s)

rm -rf "$ROOT"
cp -a "$BASE" "$ROOT"
rm -f "$ROOT/.complete"
echo sframe-guest >"$ROOT/etc/hostname"
# A machine ID of its own: not a first boot (no systemd-firstboot questions).
chroot "$ROOT" systemd-machine-id-setup >/dev/null
# The 9p root is mounted by the kernel (root=, rootflags=); nothing else.
: >"$ROOT/etc/fstab"
(cd "$REPO/tools/unwind_user/sframe_synth" && PATH=$HOME/.cargo/bin:$PATH cargo build --release -q)
install -m 755 "$REPO/tools/unwind_user/sframe_synth/target/release/sframe-synth" "$ROOT/usr/local/bin/"
install -m 644 "$REPO/tools/unwind_user/sframe_synth/systemd/sframe-synth.service" "$ROOT/etc/systemd/system/"
strip --strip-debug -o "$ROOT/usr/local/bin/perf" "$PERF"
install -m 755 "$HERE/guest-systemd.sh" "$ROOT/usr/local/sbin/"
install -D -m 644 "$HERE/pylate.py" "$ROOT/usr/local/share/sframe-synth-test/pylate.py"
install -m 644 "$HERE/sframe-synth-test.service" "$ROOT/etc/systemd/system/"
[ -n "${LATE_SECONDS:-}" ] && sed -i "s/^LATE_SECONDS=.*/LATE_SECONDS=$LATE_SECONDS/" "$ROOT/usr/local/sbin/guest-systemd.sh"
chroot "$ROOT" systemctl enable sframe-synth.service sframe-synth-test.service 2>&1 | sed 's/^/systemd: /'
ls -l "$ROOT/etc/systemd/system/multi-user.target.wants/" | grep -o 'sframe-synth.*' | sed 's/^/systemd: enabled: /'

ACCEL=${GUEST_ACCEL:-$(cat "$(dirname "$WORK")/check/kvm-probe" 2>/dev/null || echo tcg)}
if [ "$ACCEL" = kvm ]; then
	QACCEL=(-enable-kvm -cpu host)
else
	QACCEL=(-accel tcg -cpu max)
fi
# root=/dev/root: the 9p mount tag (harness/run-vng.sh); rw: systemd
# writes to the root (its journal's machine ID, the provider's cache);
# cache=loose as make vng has it.
ROOTFLAGS=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose
# kunit.enable=0: the test kernel's KUnit suites (make check runs them)
# would take a minute of the boot under TCG.
CMDLINE="kunit.enable=0 console=ttyS0 root=/dev/root rootfstype=9p rootflags=$ROOTFLAGS rw init=/lib/systemd/systemd panic=-1 oops=panic loglevel=6"
mkdir -p "$RUN"
rm -f "$RUN/console.log" "$RUN/results.log"
T2=$(date +%s)
echo "systemd: staged in $((T2 - T0)) s (debootstrap $((T1 - T0)) s); booting ($ACCEL, timeout ${TIMEOUT}s), logs in $RUN"
rc=0
# q35, as vng starts it under TCG: on the default i440fx machine this
# kernel (no PCI MSI) found no interrupt for the virtio-pci device (ACPI's
# _PRT method timed out after 35 s: "PCI INT A: no GSI") and systemd
# never started.
timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 -machine q35 "${QACCEL[@]}" -m "${GUEST_MEM:-2G}" -smp 2 \
	-nographic -no-reboot -monitor none -nic none -kernel "$BZ" -append "$CMDLINE" \
	-fsdev local,id=root,path="$ROOT",security_model=passthrough \
	-device virtio-9p-pci,fsdev=root,mount_tag=/dev/root \
	-serial "file:$RUN/console.log" -serial "file:$RUN/results.log" \
	</dev/null >"$RUN/qemu.log" 2>&1 || rc=$?
T3=$(date +%s)
echo "systemd: guest ran $((T3 - T2)) s (exit $rc); $((T3 - T0)) s in all"
echo "$rc" >"$RUN/rc"
PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" python3 -m demo.systemd "$RUN" "$WORK" |
	tee "$WORK/report.txt"
exit "${PIPESTATUS[0]}"
