#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the perf tool of the kernel tree we test (tools/perf of the patched
# 7.2 source), out of tree, with a minimal feature set: libelf and libdw for
# symbols and DWARF unwinding, nothing else optional.  Its Debian
# packages come from install-deps.sh.  Idempotent: a second run
# only re-runs perf's own make, which does nothing when nothing changed.
#
# Usage: build-perf.sh KERNEL_SRC PERF_DIR
#   The sources perf needs (its MANIFEST) are copied to PERF_DIR/src, so
#   KERNEL_SRC is only read; objects go to PERF_DIR/build and the binary is
#   PERF_DIR/build/perf.
set -euo pipefail
SRC=$1 PD=$2
JOBS=${JOBS:-$(nproc)}

# perf's build dependencies are in the project's one list.
"$(dirname "$0")/install-deps.sh" >/dev/null

# Copy what perf's MANIFEST lists (what `make perf-tar-src-pkg` would pack);
# rsync keeps timestamps, so an unchanged tree rebuilds nothing.
mkdir -p "$PD/src" "$PD/build"
(
	cd "$SRC"
	# shellcheck disable=SC2046 # globs in MANIFEST are meant to expand
	rsync -a --relative $(sed -e '/^#/d' -e '/^$/d' tools/perf/MANIFEST) "$PD/src/"
)
# The copy is no git tree and has no top Makefile: give perf its version the
# way perf's own source tarball does.
kv=$(awk '/^VERSION =/{v=$3} /^PATCHLEVEL =/{p=$3} /^SUBLEVEL =/{s=$3}
	END {print v "." p "." s}' "$SRC/Makefile")
cid=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || true)
vf="#define PERF_VERSION \"$kv${cid:+.g$cid}\""
[ "$(cat "$PD/src/PERF-VERSION-FILE" 2>/dev/null)" = "$vf" ] ||
	echo "$vf" >"$PD/src/PERF-VERSION-FILE"

# Everything optional is off except libelf/libdw (symbolization, --call-graph
# dwarf).  BUILD_BPF_SKEL=0 and NO_LIBBPF: the guest kernel has no BPF.
PERF_FLAGS=(
	NO_LIBTRACEEVENT=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_JVMTI=1 NO_LIBBPF=1
	BUILD_BPF_SKEL=0 NO_LIBUNWIND=1 NO_LIBNUMA=1 NO_SLANG=1 NO_GTK2=1
	NO_LIBBABELTRACE=1 NO_BABELTRACE2=1 NO_LIBCAP=1 NO_LIBPFM4=1
	NO_LIBDEBUGINFOD=1 NO_CAPSTONE=1 NO_LIBLLVM=1 NO_CLANG=1 NO_LZMA=1
	NO_LIBZSTD=1 NO_SDT=1 NO_JEVENTS=1 NO_RUST=1 NO_SHELLCHECK=1
	NO_LIBCRYPTO=1 NO_PERF_READ_VDSO32=1 NO_PERF_READ_VDSOX32=1
	NO_DEMANGLE=1 WERROR=0
)
if ! make -C "$PD/src/tools/perf" O="$PD/build" -j"$JOBS" "${PERF_FLAGS[@]}" \
	>"$PD/build.log" 2>&1; then
	tail -40 "$PD/build.log" >&2
	echo "build-perf: FAILED, log in $PD/build.log" >&2
	exit 1
fi
for f in libelf libdw-dwarf-unwind; do
	if ! "$PD/build/perf" version --build-options | grep -q " $f: \[ on"; then
		echo "build-perf: ERROR: perf was built without $f (see $PD/build.log)" >&2
		exit 1
	fi
done
echo "perf: $PD/build/perf ($("$PD/build/perf" version))"
