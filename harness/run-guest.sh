#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the test kernel under QEMU with our initramfs.
#
# Usage: run-guest.sh BZIMAGE INITRAMFS OUTDIR MODE TIMEOUT
#   MODE is passed to the guest's /init (harness=MODE): test, experiment,
#   probe or shell.  ttyS0 (the kernel console) goes to OUTDIR/console.log, ttyS1 (what
#   the tests print) to OUTDIR/results.log; in shell mode ttyS0 is this
#   terminal.  TIMEOUT bounds the whole boot; 0 means no bound (shell).
#   Exit status: 0 if the guest powered off by itself, 124 on timeout.
#   GUEST_MEM: the guest's memory (QEMU's -m), 2G unless set (make
#   check-kasan gives more: KASAN's shadow takes an eighth of it).
#   GUEST_QEMU_EXTRA: more QEMU options, split at spaces (make profile).
#   GUEST_ACCEL=tcg: TCG even where KVM works (QEMU's plugins need TCG).
#   GUEST_ARCH=arm64: BZIMAGE is an arm64 Image, booted under
#   qemu-system-aarch64 -M virt -cpu max (TCG: the host is x86_64); the
#   console is the PL011 (ttyAMA0), what the tests print goes to a virtio
#   console (hvc0), the machine's only other port.
set -euo pipefail

BZ=$1 INITRD=$2 OUT=$3 MODE=$4 TIMEOUT=$5
mkdir -p "$OUT"
PROBE_CACHE=$(dirname "$OUT")/kvm-probe

# KVM works on some machines and hangs on others (nested virtualisation):
# probe once per machine with a short timeout, remember the answer.
accel() {
	if [ ! -f "$PROBE_CACHE" ]; then
		local r=tcg
		if [ -w /dev/kvm ]; then
			local d
			d=$(mktemp -d)
			timeout 45 qemu-system-x86_64 -enable-kvm -cpu host -m 512M \
				-nographic -no-reboot -kernel "$BZ" -initrd "$INITRD" \
				-append "console=ttyS0 panic=-1 harness=probe" \
				-serial "file:$d/c" -serial "file:$d/r" -monitor none \
				>/dev/null 2>&1 || true
			grep -q 'guest: probe ok' "$d/r" 2>/dev/null && r=kvm
			rm -rf "$d"
		fi
		echo "$r" >"$PROBE_CACHE"
	fi
	cat "$PROBE_CACHE"
}

ARCH=${GUEST_ARCH:-x86_64}
case "$ARCH" in
x86_64 | arm64) ;;
*) echo "run-guest: GUEST_ARCH=$ARCH: x86_64 or arm64" >&2; exit 2 ;;
esac
ACCEL=tcg
[ "$ARCH" = arm64 ] || ACCEL=${GUEST_ACCEL:-$(accel)}
if [ "$ARCH" = arm64 ]; then
	# Pointer authentication, which the tests' return addresses use, with
	# the implementation-defined algorithm: QARMA5, the architected one,
	# is slow to emulate, and the kernel signs its own return addresses.
	QACCEL=(-M virt -accel tcg -cpu max,pauth-impdef=on)
	# GUEST_ICOUNT as below (make bench-arm64).
	if [ -n "${GUEST_ICOUNT:-}" ]; then
		ACCEL=tcg-icount
		QACCEL=(-M virt -accel tcg,thread=single -cpu max,pauth-impdef=on
			-icount "shift=$GUEST_ICOUNT,sleep=off")
	fi
elif [ "$ACCEL" = kvm ]; then
	QACCEL=(-enable-kvm -cpu host)
elif [ -n "${GUEST_ICOUNT:-}" ]; then
	# The guest's clock counts instructions (2^GUEST_ICOUNT ns each), not
	# host time: what the guest measures is then a count, deaf to the
	# host's load. icount needs one TCG thread for all vCPUs.
	ACCEL=tcg-icount
	QACCEL=(-accel tcg,thread=single -cpu max -icount "shift=$GUEST_ICOUNT,sleep=off")
else
	QACCEL=(-accel tcg -cpu max)
fi
echo "run-guest: $MODE, $ACCEL, timeout ${TIMEOUT}s, logs in $OUT" >&2
echo "$ACCEL" >"$OUT/accel"

read -r -a QEXTRA <<<"${GUEST_QEMU_EXTRA:-}"
CMDLINE="panic=-1 oops=panic harness=$MODE loglevel=7"
if [ "$ARCH" = arm64 ]; then
	CMDLINE="console=ttyAMA0 harness_out=hvc0 $CMDLINE"
	QBIN=qemu-system-aarch64
	RESULTS=(-device virtio-serial-device
		-chardev "file,id=results,path=$OUT/results.log"
		-device virtconsole,chardev=results)
else
	CMDLINE="console=ttyS0 $CMDLINE"
	QBIN=qemu-system-x86_64
	RESULTS=(-serial "file:$OUT/results.log")
fi
QEMU=("$QBIN" "${QACCEL[@]}" -m "${GUEST_MEM:-2G}" -smp 2 -nographic -no-reboot
	-kernel "$BZ" -initrd "$INITRD" -monitor none "${QEXTRA[@]}")

if [ "$MODE" = shell ]; then
	exec "${QEMU[@]}" -append "$CMDLINE" -serial mon:stdio "${RESULTS[@]}"
fi

rm -f "$OUT/console.log" "$OUT/results.log"
rc=0
timeout --foreground -k 10 "$TIMEOUT" "${QEMU[@]}" -append "$CMDLINE" \
	-serial "file:$OUT/console.log" "${RESULTS[@]}" \
	</dev/null >"$OUT/qemu.log" 2>&1 || rc=$?
exit $rc
