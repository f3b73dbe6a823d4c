#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what the build, the boot and the tests need, if it is missing.
# Idempotent: a second run on a prepared machine does nothing but checks.
# Debian 12 (bookworm) host, x86_64.
#
# Usage: install-deps.sh [fresh-root | vng VENV | oracle | systemd | arm64]
#   fresh-root: also what `make fresh-root` needs on the host (debootstrap).
#   systemd: also what `make systemd` needs on the host (debootstrap; the
#   guest's Debian programs come from the archive into its own root).
#   vng: also virtme-ng (make vng), from PyPI into the virtual environment
#   VENV, at the versions of harness/vng-requirements.txt; only make vng
#   asks for it, so make check needs nothing from PyPI.
#   oracle: also the Debian programs make oracle profiles.
#   arm64: also what make check-arm64 needs: Debian's cross compiler and
#   binutils for arm64 and qemu-system-aarch64; and arm64 as a foreign
#   architecture of dpkg, so that the guest's arm64 packages (busybox) can
#   be downloaded from the archive and unpacked, not installed.
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
	# make check-kasan builds the kernel with clang-22 (LLVM=-22), and
	# bindgen must then use libclang 22: libclang 19 rejects the warning
	# options the kernel found clang-22 to accept (clang-22 pulls it in
	# today; named so that stays true).
	libclang1-22
	binutils file
	# tools/testing/vma, the mm's user-space VMA tests (the registry's
	# munmap hook has a stub there).
	liburcu-dev
	# The demo's interpreter rows (also in make check): Debian's Lua 5.4,
	# and curl for its source package (tools/unwind_user/lua).
	lua5.4 curl
	# The Python row (also in make check): Debian's python3.11 with
	# tools/unwind_user/python's extension, built against its headers.
	python3.11 python3.11-dev
)
[ "${1:-}" = fresh-root ] && APT_PKGS+=(debootstrap)
[ "${1:-}" = systemd ] && APT_PKGS+=(debootstrap)
# virtme-ng runs on Debian's python3 in a venv. Its guest init starts the
# host's udevd, whose rules make the /dev/virtio-ports/virtme.* names it
# wires the command's stdin, stdout and exit status to (without udev the
# command's output goes to the kernel console). It shares the host's root
# with the guest over 9p, which qemu-system-x86 has: bookworm has no
# virtiofsd of its own (qemu's C one is not what vng drives; trixie's
# would need trixie's libc).
[ "${1:-}" = vng ] && APT_PKGS+=(python3 python3-venv udev)
# make oracle profiles Debian's own xz, sqlite3 and python3.11, and
# times the start of curl; make system also bzip2 and zstd, started after
# the provider of file tables.
[ "${1:-}" = oracle ] && APT_PKGS+=(xz-utils sqlite3 python3.11 curl bzip2 zstd)

[ "${1:-}" = arm64 ] && APT_PKGS+=(gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu
	libc6-dev-arm64-cross qemu-system-arm)

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if [ "${1:-}" = arm64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "install-deps: dpkg --add-architecture arm64"
	$SUDO dpkg --add-architecture arm64
	$SUDO apt-get update -q
fi

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

if [ "${1:-}" = vng ]; then
	VENV=${2:?usage: install-deps.sh vng VENV}
	REQS=$(dirname "$0")/vng-requirements.txt
	want=$(sed -n 's/^virtme-ng==//p' "$REQS")
	if ! "$VENV/bin/vng" --version 2>/dev/null | grep -qxF "virtme-ng $want" ||
	   ! "$VENV/bin/pip" freeze 2>/dev/null | sort | cmp -s - <(grep -v '^#' "$REQS" | sort); then
		echo "install-deps: pip install virtme-ng $want into $VENV"
		# Debian's python3, not whatever python3 comes first in PATH.
		/usr/bin/python3 -m venv --clear "$VENV"
		"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps \
			--require-virtualenv -r "$REQS"
	fi
	echo "install-deps: vng ok ($("$VENV/bin/vng" --version) in $VENV)"
fi
