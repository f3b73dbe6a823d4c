#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what the build, the boot and the tests need, if it is missing.
# Idempotent: a second run on a prepared machine does nothing but checks.
# Debian 12 (bookworm) host, x86_64.
#
# Usage: install-deps.sh [fresh-root]
#   fresh-root: also what `make fresh-root` needs on the host (debootstrap).
set -euo pipefail

APT_PKGS=(
	build-essential flex bison bc cpio kmod xz-utils rsync python3 git
	libelf-dev libssl-dev libdw-dev libzstd-dev zlib1g-dev pkg-config
	qemu-system-x86 busybox-static
	rustc-web rust-web-src rust-web-clippy clang
	# bindgen needs libclang >= 17; Debian 12's default (libclang-dev) is 14.
	# Name the version so the build does not depend on what else is here;
	# the Makefile points bindgen at it (LIBCLANG_PATH).
	libclang1-19
	# The selftest programs of other SFrame producers (bookworm-security).
	clang-22 lld-22 llvm-22
	binutils file
)
[ "${1:-}" = fresh-root ] && APT_PKGS+=(debootstrap)

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

missing=()
for p in "${APT_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: apt-get install ${missing[*]}"
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# bindgen for the kernel's Rust build: 7.2 needs >= 0.71.1.
BINDGEN_VERSION=0.72.1
if ! bindgen --version 2>/dev/null | grep -q "$BINDGEN_VERSION"; then
	echo "install-deps: cargo install bindgen-cli $BINDGEN_VERSION"
	cargo install --quiet --locked bindgen-cli --version "$BINDGEN_VERSION"
fi
LIBCLANG=/usr/lib/llvm-19/lib
if ! ls "$LIBCLANG"/libclang*.so* >/dev/null 2>&1; then
	echo "install-deps: ERROR: libclang1-19 installed but no libclang*.so* in $LIBCLANG" >&2
	exit 1
fi
echo "install-deps: ok ($(/usr/bin/rustc --version), $(bindgen --version), libclang in $LIBCLANG)"
