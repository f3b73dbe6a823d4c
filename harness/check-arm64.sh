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
# Debian's cross binutils (2.40), and the deep-chain test from the same
# cross compiler with the aarch64 binutils 2.44 (V2) and 2.47.50 (V3) of
# harness/producers/build.sh, fetched into $UNWIND_USER_TOOLCHAINS (no
# clang one: see there). The guest's busybox and the libraries
# (the dynamic tests' libc) are Debian's arm64 builds, downloaded from
# the archive and unpacked, not installed (harness/arm64-root.sh, in
# DIR/root). Then make oracle-arm64's per-sample comparison of the
# kernel's stacks with perf's DWARF unwind (demo/run-oracle-arm64.sh),
# with PERF, the arm64 perf.
#
# Usage: check-arm64.sh REPO KBUILD_DIR OUT DIR TIMEOUT PERF
set -euo pipefail
REPO=$1 KB=$2 OUT=$3 DIR=$4 TIMEOUT=$5 PERF=$6
SRC=$KB/src GUEST=$DIR/guest LOGS=$DIR/logs
CROSS=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
# The binutils of other SFrame producers, kept in KBUILD_DIR as make
# producers keeps them.
export UNWIND_USER_TOOLCHAINS=${UNWIND_USER_TOOLCHAINS:-$KB/toolchains}
rm -rf "$GUEST" "$LOGS"
mkdir -p "$GUEST/selftests" "$LOGS/guest"

echo "check-arm64: kernel source $(cat "$SRC/.debian-version"), logs in $LOGS"

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
# The other producers' programs, against the headers just installed in
# $OUT (build.sh's build-arm64 in $KB).
KBUILD_DIR=$KB PRODUCER_ARCH=arm64 "$REPO/harness/producers/build.sh" "$DIR/producers"
cp "$DIR/producers"/*_test "$GUEST/selftests/"

GUEST_BUSYBOX=$DIR/root/bin/busybox GUEST_SYSROOT=$DIR/root \
	"$REPO/harness/mkinitramfs.sh" "$GUEST" "$GUEST/initramfs.cpio.gz"
rc=0
GUEST_ARCH=arm64 "$REPO/harness/run-guest.sh" "$OUT/arch/arm64/boot/Image" \
	"$GUEST/initramfs.cpio.gz" "$LOGS/guest" test "$TIMEOUT" || rc=$?
echo "$rc" >"$LOGS/guest/rc"

# The kernel's stacks against perf's DWARF unwind, per program: no wrong
# frame, >= 99 % of the samples whose DWARF unwind is whole equal.
"$REPO/demo/run-oracle-arm64.sh" "$OUT/arch/arm64/boot/Image" "$PERF" "$DIR/oracle" \
	"$TIMEOUT" "$DIR/root" "$OUT/usr/include" >"$LOGS/oracle.log" 2>&1 || true
python3 "$REPO/harness/results.py" --guest "$LOGS"
