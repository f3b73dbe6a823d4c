#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-arm64: sframe-synth's round trip on Debian's arm64 libraries;
# the arm64 kernel (make kernel-arm64) booted under qemu-system-aarch64 -M
# virt -cpu max, running the kselftests built for arm64 by Debian's cross
# compiler; then one summary.
#
# The arm64 kernel has the SFrame unwinder and KUnit (which runs at boot);
# the selftests are those the selftests' Makefile builds for arm64 (all
# but the two whose code under test is x86's), with SFrame V1 from
# Debian's cross binutils (2.40). The guest's busybox and the libraries
# (the dynamic tests' libc) are Debian's arm64 builds, downloaded from
# the archive and unpacked, not installed.
#
# Usage: check-arm64.sh REPO KBUILD_DIR OUT DIR TIMEOUT
set -euo pipefail
REPO=$1 KB=$2 OUT=$3 DIR=$4 TIMEOUT=$5
SRC=$KB/src GUEST=$DIR/guest LOGS=$DIR/logs
CROSS=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
rm -rf "$GUEST" "$LOGS"
mkdir -p "$GUEST/selftests" "$LOGS/guest"

echo "check-arm64: kernel source $(cat "$SRC/.debian-version"), logs in $LOGS"

# The guest's busybox and the libraries sframe-synth is checked on, in one
# root; complete once its last file is there.
if [ ! -e "$DIR/root/.unpacked" ]; then
	rm -rf "$DIR/debs" "$DIR/root"
	mkdir -p "$DIR/debs"
	(cd "$DIR/debs" && apt-get download -q busybox-static:arm64 libc6:arm64 \
		libstdc++6:arm64 libgcc-s1:arm64 zlib1g:arm64)
	for d in "$DIR"/debs/*.deb; do dpkg-deb -x "$d" "$DIR/root"; done
	touch "$DIR/root/.unpacked"
fi

# sframe-synth on Debian's arm64 libraries and on code the cross compiler
# builds with signed return addresses, against gimli's rows.
{
	if (cd "$REPO/tools/unwind_user/sframe_synth" &&
	    SFRAME_SYNTH_ARM64_ROOT=$DIR/root cargo test --release \
		--test debian_libs arm64 -- --nocapture) >"$LOGS/sframe-synth.log" 2>&1; then
		echo "ok 1 sframe-synth: Debian's arm64 libraries and PAC-signed code match gimli"
	else
		echo "not ok 1 sframe-synth on arm64 objects: see $LOGS/sframe-synth.log"
	fi
} >"$LOGS/host.log"

make -s -C "$SRC" O="$OUT" "${CROSS[@]}" headers_install \
	INSTALL_HDR_PATH="$OUT/usr" >/dev/null
make -s -C "$SRC/tools/testing/selftests/unwind_user" "${CROSS[@]}" \
	OUTPUT="$GUEST/selftests" KHDR_INCLUDES="-isystem $OUT/usr/include" all

GUEST_BUSYBOX=$DIR/root/bin/busybox GUEST_SYSROOT=$DIR/root \
	"$REPO/harness/mkinitramfs.sh" "$GUEST" "$GUEST/initramfs.cpio.gz"
rc=0
GUEST_ARCH=arm64 "$REPO/harness/run-guest.sh" "$OUT/arch/arm64/boot/Image" \
	"$GUEST/initramfs.cpio.gz" "$LOGS/guest" test "$TIMEOUT" || rc=$?
echo "$rc" >"$LOGS/guest/rc"
python3 "$REPO/harness/results.py" --guest "$LOGS"
