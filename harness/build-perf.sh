#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the perf tool of the kernel tree we test (tools/perf of the patched
# 7.2 source), out of tree, with a minimal feature set: libelf and libdw for
# symbols and DWARF unwinding, nothing else optional.  Its Debian
# packages come from install-deps.sh.  Idempotent: a second run
# only re-runs perf's own make, which does nothing when nothing changed.
#
# Usage: build-perf.sh KERNEL_SRC PERF_DIR [SYSROOT_DIR]
#   The sources perf needs (its MANIFEST) are copied to PERF_DIR/src, so
#   KERNEL_SRC is only read; objects go to PERF_DIR/build and the binary is
#   PERF_DIR/build/perf.
#   With SYSROOT_DIR: perf for arm64 (make oracle-arm64), cross-built and
#   statically linked, for a guest whose root is a busybox initramfs. The
#   arm64 libraries it links (elfutils' libelf and libdw, and what libdw.a
#   needs: zlib, liblzma, libbz2, libzstd) are Debian's arm64 packages,
#   downloaded (kept in SYSROOT_DIR/debs) and unpacked into SYSROOT_DIR,
#   not installed. elfutils is trixie-backports' (0.196): libdw strips a
#   signed return address's authentication code in 0.192 (Debian 12's
#   0.188 leaves DW_CFA_AARCH64_negate_ra_state as "not handled yet"),
#   and trixie's own 0.192 cannot link statically (its libelf.a lacks
#   eu_search_tree_init and the like). Those libraries
#   are built against trixie's glibc 2.41 (__isoc23_strtol, from 2.38):
#   perf links trixie's libc.a and start files too, while it compiles
#   against the cross compiler's glibc 2.36 headers, whose interfaces
#   2.41 keeps.
#
# perf's source gets harness/perf-libdw-pac-mask.patch: on arm64, perf
# gives libdw the running CPU's pointer authentication mask.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# Absolute: make runs in other directories, and perf's Makefile names its
# output by the canonical path of O.
SRC=$(readlink -f "$1") PD=$(readlink -m "$2") SR=${3:+$(readlink -m "$3")}
JOBS=${JOBS:-$(nproc)}

# perf's build dependencies are in the project's one list.
"$HERE/install-deps.sh" ${SR:+arm64} >/dev/null

CROSS=()
# Everything optional is off except libelf/libdw (symbolization, --call-graph
# dwarf).  BUILD_BPF_SKEL=0 and NO_LIBBPF: the guest kernel has no BPF.
PERF_FLAGS=(
	NO_LIBTRACEEVENT=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_JVMTI=1 NO_LIBBPF=1
	BUILD_BPF_SKEL=0 NO_LIBUNWIND=1 NO_LIBNUMA=1 NO_SLANG=1 NO_GTK2=1
	NO_LIBBABELTRACE=1 NO_BABELTRACE2=1 NO_LIBCAP=1 NO_LIBPFM4=1
	NO_LIBDEBUGINFOD=1 NO_CAPSTONE=1 NO_LIBLLVM=1 NO_CLANG=1 NO_LZMA=1
	NO_SDT=1 NO_JEVENTS=1 NO_RUST=1 NO_SHELLCHECK=1
	NO_LIBCRYPTO=1 NO_PERF_READ_VDSO32=1 NO_PERF_READ_VDSOX32=1
	NO_DEMANGLE=1 WERROR=0
)
if [ -n "$SR" ]; then
	TRIPLET=aarch64-linux-gnu
	# PACKAGE/SUITE. The apt sources of trixie are toolchains.sh's, those
	# of trixie-backports fetch-kernel.sh's (make apply runs it first).
	"$HERE/../rust/sframe/tests/corpus/toolchains.sh" >/dev/null
	DEBS=(
		libelf-dev/trixie-backports libelf1t64/trixie-backports
		libdw-dev/trixie-backports libdw1t64/trixie-backports
		libc6-dev/trixie libc6/trixie zlib1g-dev/trixie zlib1g/trixie
		liblzma-dev/trixie liblzma5/trixie libbz2-dev/trixie libbz2-1.0/trixie
		libzstd-dev/trixie libzstd1/trixie
	)
	# Complete once its stamp names the packages it was unpacked from.
	want="${DEBS[*]/\//:arm64/}"
	if [ "$(cat "$SR/.unpacked" 2>/dev/null)" != "$want" ]; then
		rm -rf "$SR/debs" "$SR/usr" "$SR/lib"
		mkdir -p "$SR/debs"
		# shellcheck disable=SC2086 # one word per package
		(cd "$SR/debs" && apt-get download -q $want)
		for d in "$SR"/debs/*.deb; do dpkg-deb -x "$d" "$SR"; done
		echo "$want" >"$SR/.unpacked"
	fi
	# EXTRA_CFLAGS and LDFLAGS reach perf's feature tests as well as its
	# build. There is no aarch64-linux-gnu-pkg-config: Debian's, pointed
	# at SYSROOT_DIR's .pc files only, answers for it (perf asks it
	# libdw's version when linking statically). --sysroot: the headers
	# the cross compiler lacks (elfutils', zlib's, ...) come from
	# SYSROOT_DIR, after its own glibc ones, and not from the host's
	# /usr/include, which it reads without; the paths in trixie's libm.a,
	# a linker script, are in SYSROOT_DIR. -B and -L: trixie's crt1.o and
	# the like, and its libc.a, before the cross compiler's.
	export PKG_CONFIG_LIBDIR=$SR/usr/lib/$TRIPLET/pkgconfig:$SR/usr/share/pkgconfig
	export PKG_CONFIG_SYSROOT_DIR=$SR
	unset PKG_CONFIG_PATH
	CROSS=(
		ARCH=arm64 CROSS_COMPILE=$TRIPLET- PKG_CONFIG=pkg-config
		EXTRA_CFLAGS="--sysroot=$SR"
		LDFLAGS="-static --sysroot=$SR -B$SR/usr/lib/$TRIPLET/ -L$SR/usr/lib/$TRIPLET"
	)
	# Not NO_LIBZSTD: trixie's libelf decompresses zstd, and perf then
	# needs -lzstd (its Makefile refuses NO_LIBZSTD).
else
	PERF_FLAGS+=(NO_LIBZSTD=1)
fi

# Copy what perf's MANIFEST lists (what `make perf-tar-src-pkg` would pack);
# rsync keeps timestamps, so an unchanged tree rebuilds nothing.
# The file our patch changes is left out, and rewritten only when the
# patched text differs.
PATCHED=tools/perf/util/unwind-libdw.c
mkdir -p "$PD/src" "$PD/build"
(
	cd "$SRC"
	# shellcheck disable=SC2046 # globs in MANIFEST are meant to expand
	rsync -a --relative --exclude="/$PATCHED" \
		$(sed -e '/^#/d' -e '/^$/d' tools/perf/MANIFEST) "$PD/src/"
)
patch -s -o "$PD/src/$PATCHED.new" "$SRC/$PATCHED" "$HERE/perf-libdw-pac-mask.patch"
if cmp -s "$PD/src/$PATCHED.new" "$PD/src/$PATCHED"; then
	rm "$PD/src/$PATCHED.new"
else
	mv "$PD/src/$PATCHED.new" "$PD/src/$PATCHED"
fi
# The copy is no git tree and has no top Makefile: give perf its version the
# way perf's own source tarball does.
kv=$(awk '/^VERSION =/{v=$3} /^PATCHLEVEL =/{p=$3} /^SUBLEVEL =/{s=$3}
	END {print v "." p "." s}' "$SRC/Makefile")
cid=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || true)
vf="#define PERF_VERSION \"$kv${cid:+.g$cid}\""
[ "$(cat "$PD/src/PERF-VERSION-FILE" 2>/dev/null)" = "$vf" ] ||
	echo "$vf" >"$PD/src/PERF-VERSION-FILE"

# Only the perf binary: `all` also links the dlfilters, shared objects that
# a static link cannot make.
B=$PD/build
if ! make -C "$PD/src/tools/perf" O="$B" -j"$JOBS" "${CROSS[@]}" "${PERF_FLAGS[@]}" \
	"$B/perf" >"$PD/build.log" 2>&1; then
	tail -40 "$PD/build.log" >&2
	echo "build-perf: FAILED, log in $PD/build.log" >&2
	exit 1
fi
if [ -n "$SR" ]; then
	# No arm64 perf runs here: what perf's configuration detected (what
	# perf version --build-options would report), and a static binary.
	for f in CONFIG_LIBELF CONFIG_LIBDW CONFIG_LIBDW_DWARF_UNWIND; do
		if ! grep -qx "$f=y" "$B/.config-detected"; then
			echo "build-perf: ERROR: arm64 perf was built without $f (see $PD/build.log)" >&2
			exit 1
		fi
	done
	if ! file -b "$B/perf" | grep -q 'ARM aarch64.*statically linked'; then
		echo "build-perf: ERROR: $B/perf is no static arm64 executable" >&2
		exit 1
	fi
	echo "perf: $B/perf (arm64, static)"
	exit 0
fi
for f in libelf libdw-dwarf-unwind; do
	if ! "$PD/build/perf" version --build-options | grep -q " $f: \[ on"; then
		echo "build-perf: ERROR: perf was built without $f (see $PD/build.log)" >&2
		exit 1
	fi
done
echo "perf: $PD/build/perf ($("$PD/build/perf" version))"
