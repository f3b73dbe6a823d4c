#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest's initramfs: busybox, our /init and the selftest binaries
# (static, so the guest needs no libraries of its own).
#
# Usage: mkinitramfs.sh GUEST_DIR OUTPUT
set -euo pipefail
GUEST=$1 OUTFILE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$GUEST/rootfs
rm -rf "$ROOT"
mkdir -p "$ROOT"/{bin,sbin,usr/bin,proc,sys,dev,tmp,selftests}
# GUEST_BUSYBOX: another architecture's (make check-arm64).
cp "${GUEST_BUSYBOX:-/bin/busybox}" "$ROOT/bin/busybox"
cp "$HERE/guest-init.sh" "$ROOT/init"
chmod 755 "$ROOT/init"
if [ -d "$GUEST/selftests" ]; then
	cp -a "$GUEST/selftests/." "$ROOT/selftests/"
fi
# Another architecture's programs (make check-arm64) get their libraries
# from GUEST_SYSROOT, an unpacked root of that architecture's libc: the
# host's ldd cannot tell what they need.
if [ -n "${GUEST_SYSROOT:-}" ]; then
	cp -a "$GUEST_SYSROOT/lib" "$ROOT/"
fi
# Dynamically linked programs (and the libraries they dlopen, listed in
# selftests/extra-libs, one path a line) get their shared libraries from
# the host, at the same paths.
copy_libs() {
	local lib
	for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true); do
		if [ ! -e "$ROOT$lib" ]; then
			mkdir -p "$ROOT$(dirname "$lib")"
			cp -L "$lib" "$ROOT$lib"
		fi
	done
}
for f in "$ROOT"/selftests/* "$ROOT"/usr/bin/*; do
	if [ -f "$f" ] && [ -x "$f" ]; then
		copy_libs "$f"
	fi
done
if [ -f "$ROOT/selftests/extra-libs" ]; then
	while read -r lib; do
		# Timestamps kept: Python checks its .pyc files against them.
		mkdir -p "$ROOT$(dirname "$lib")" && cp -L --preserve=timestamps "$lib" "$ROOT$lib" &&
			copy_libs "$lib"
	done <"$ROOT/selftests/extra-libs"
fi

# The guest runs every executable test program, in name order.
(cd "$ROOT/selftests" && find . -maxdepth 1 -type f -perm -u+x -name '*_test' |
	sed 's|^\./||' | sort) >"$ROOT/selftests/list"
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet -R 0:0) | gzip -1 >"$OUTFILE"
echo "initramfs: $OUTFILE ($(du -h "$OUTFILE" | cut -f1))"
