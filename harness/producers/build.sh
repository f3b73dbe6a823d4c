#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the selftest programs of other SFrame producers into bin/ and write
# MANIFEST. The kselftest build (tools/testing/selftests/unwind_user) uses
# the host's gcc 12 + binutils 2.40, which emit SFrame V1 only; these are
# the same deep-chain test (sframe_unwind_test.c + unwind_user_test.c) from
# the other producers, plus a C++ program, all -O2 -fomit-frame-pointer,
# static and non-PIE:
#
#   sframe_unwind_v2_binutils244_test  gcc 12 + trixie binutils 2.44    V2
#   sframe_unwind_v3_binutils247_test  gcc 12 + sid binutils 2.47.50    V3
#   sframe_unwind_v2_clang22_test      clang-22 + ld.lld-22             V2, FDE_FUNC_START_PCREL
#   sframe_cxx_test                    g++ 12 + binutils 2.40           V1
#
# ld.lld cannot merge several .sframe inputs, so the clang program is one
# translation unit (sframe_unwind_one.c); it writes no PT_GNU_SFRAME, so
# that program registers its own .sframe (self_sframe() in
# unwind_user_test.c). GNU ld 2.47.50 does not help: it rejects clang's V2
# input ("unexpected SFrame format version 2") and keeps a raw, corrupt
# section. (GNU ld 2.40 prints "error in one.o(.sframe); no .sframe will be
# created", exits 0 and copies the section raw with a PT_GNU_SFRAME: not
# used.) clang emits its FDEs in function order across .text and
# .text.unlikely. (the kselftest headers' noreturn helpers) and ld.lld does
# not sort them: such a section's FDEs are not in address order, and it
# rightly does not claim they are (no FDE_SORTED), which the kernel, like
# libsframe, does not support: EOPNOTSUPP at registration. Keeping all code
# in .text (-profile-guided-section-prefix=false) gives FDEs in address
# order, still without FDE_SORTED, which the kernel accepts after checking
# the order.
#
# PRODUCER_ARCH=arm64 builds the two binutils programs for arm64, with
# Debian's aarch64-linux-gnu-gcc 12 and the aarch64 binutils of trixie
# (V2) and sid (V3), checked the same way with their own dumpers; the
# kselftest build there (binutils 2.40) has V1. No clang program: clang-22
# makes no usable AArch64 SFrame. Its driver rejects --gsframe for all but
# x86-64 ("unsupported option '-Wa,--gsframe' for target
# 'aarch64-linux-gnu'"); forced (-Xclang --gsframe), its assembler writes
# a header without FDEs. LLVM's MCSFrame.cpp has AArch64's FP and RA
# swapped (FP 30, RA 29; DWARF's are x29, x30) and compares that RA with
# each function's return column, which MC leaves unset (INT_MAX, x86's
# value there) without .cfi_return_column: every function is dropped
# ("non-default RA register in .cfi_return_column 2147483647"), those with
# their CFA on x29 also for "canonical Frame Address not in stack- or
# frame-pointer". Nor does it mark signed return addresses.
#
# `make selftests` runs this (through `make producers`) whenever one of
# the sources changes, and copies the programs into the guest: nothing
# prebuilt is committed. Needs what `make selftests` leaves in $KBUILD_DIR
# (the uapi headers in build/usr/include, the kselftest headers in src/),
# clang-22 and lld-22 (harness/install-deps.sh) and the binutils of
# rust/sframe/tests/corpus/toolchains.sh, fetched into
# $UNWIND_USER_TOOLCHAINS (the Makefile keeps them in $KBUILD_DIR).
# harness/check-arm64.sh runs it with PRODUCER_ARCH=arm64 every time, after
# installing the arm64 uapi headers in build-arm64/usr/include.
#
# Usage: [PRODUCER_ARCH=x86_64|arm64] build.sh OUTDIR
#        (the programs and their MANIFEST)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KBUILD_DIR=${KBUILD_DIR:-$HOME/.cache/unwind-user}
ARCH=${PRODUCER_ARCH:-x86_64}
case $ARCH in
x86_64) HDR=$KBUILD_DIR/build/usr/include FIRST="make selftests" ;;
arm64) HDR=$KBUILD_DIR/build-arm64/usr/include FIRST="make check-arm64" ;;
*) echo "build.sh: PRODUCER_ARCH=$ARCH: not x86_64 or arm64" >&2; exit 1 ;;
esac
KSELF=$KBUILD_DIR/src/tools/testing/selftests
BIN=$1

for f in "$HDR/linux/unwind_user.h" "$KSELF/kselftest_harness.h"; do
	[ -f "$f" ] || { echo "build.sh: no $f (run $FIRST first)" >&2; exit 1; }
done
TC=$("$REPO/rust/sframe/tests/corpus/toolchains.sh")
# The binutils (as, ld, objdump, readelf) of trixie and sid for ARCH; the
# programs: name:SFrame version:producer.
if [ "$ARCH" = x86_64 ]; then
	TRIXIE=$TC/trixie/bin
	SID=$TC/sid/bin
	CC=gcc GCC="gcc 12"
	PROGS=("sframe_unwind_v2_binutils244_test:V2:gcc 12 + as/ld 2.44"
	       "sframe_unwind_v3_binutils247_test:V3:gcc 12 + as/ld 2.47.50"
	       "sframe_unwind_v2_clang22_test:V2:clang-22 (integrated as) + ld.lld-22, one TU"
	       "sframe_cxx_test:V1:g++ 12 + as/ld 2.40")
else
	TRIXIE=$TC/trixie/aarch64
	SID=$TC/sid/aarch64
	CC=aarch64-linux-gnu-gcc GCC="aarch64-linux-gnu-gcc 12"
	PROGS=("sframe_unwind_v2_binutils244_test:V2:aarch64-linux-gnu-gcc 12 + as/ld 2.44"
	       "sframe_unwind_v3_binutils247_test:V3:aarch64-linux-gnu-gcc 12 + as/ld 2.47.50")
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The tests include "../kselftest_harness.h": the same layout as the tree.
mkdir -p "$WORK/selftests/unwind_user"
cp "$KSELF/kselftest.h" "$KSELF/kselftest_harness.h" "$WORK/selftests/"
cp "$REPO"/tools/testing/selftests/unwind_user/{sframe_unwind_test.c,unwind_user_test.c,unwind_user_test.h} \
	"$HERE/sframe_unwind_one.c" "$HERE/sframe_cxx_test.cc" "$WORK/selftests/unwind_user/"
cd "$WORK/selftests/unwind_user"

# As the kselftest Makefile, without -g; no build id, no absolute paths.
CFLAGS="-O2 -fomit-frame-pointer -Wall -pthread -isystem $HDR -ffile-prefix-map=$WORK=."
# On arm64 with signed return addresses, as the kselftest build (its Makefile).
[ "$ARCH" = x86_64 ] || CFLAGS+=" -mbranch-protection=standard"
LDFLAGS="-static -no-pie -pthread -Wl,--build-id=none"
SRCS="sframe_unwind_test.c unwind_user_test.c"

log() { echo "producers: $*" >&2; }
rm -rf "$BIN"
mkdir -p "$BIN"

log "$GCC + binutils 2.44 (trixie)"
"$CC" -B "$TRIXIE" $CFLAGS -Wa,--gsframe $SRCS $LDFLAGS -o "$BIN/sframe_unwind_v2_binutils244_test"

log "$GCC + binutils 2.47.50 (sid)"
"$CC" -B "$SID" $CFLAGS -Wa,--gsframe $SRCS $LDFLAGS -o "$BIN/sframe_unwind_v3_binutils247_test"

if [ "$ARCH" = x86_64 ]; then
	log "clang-22 + ld.lld-22, one translation unit"
	# -static alone: clang warns that -no-pie is unused when it compiles too.
	clang-22 $CFLAGS -Wa,--gsframe -Wa,--allow-experimental-sframe -fuse-ld=lld \
		-mllvm -profile-guided-section-prefix=false \
		sframe_unwind_one.c ${LDFLAGS/-no-pie /} -o "$BIN/sframe_unwind_v2_clang22_test"

	log "g++ 12 + binutils 2.40 (C++)"
	gcc $CFLAGS -Wa,--gsframe -c unwind_user_test.c -o unwind_user_test.o
	g++ $CFLAGS -Wextra -Wa,--gsframe -c sframe_cxx_test.cc -o sframe_cxx_test.o
	g++ sframe_cxx_test.o unwind_user_test.o $LDFLAGS -o "$BIN/sframe_cxx_test"
fi

# check NAME VERSION: the binary's own producer's dumper must see that SFrame
# version, the GNU ld ones a PT_GNU_SFRAME segment, the ld.lld one none (its
# test registers the .sframe section itself); no debug info (.symtab stays:
# the tests symbolize from it; ld.lld keeps 3 KB of .debug_frame from libc.a).
# Prints "version; flags; segment".
check() {
	local b=$BIN/$1 want=$2 ver flags pt
	case $1 in
	*clang22*)
		ver=$(llvm-readelf-22 --sframe=.sframe "$b" | sed -n 's/^ *Version: \(V[0-9]\).*/\1/p')
		flags=$(llvm-readelf-22 --sframe=.sframe "$b" |
			sed -n '/^ *Flags \[/,/^ *\]/p' | sed -n 's/^ *\([A-Za-z]*\) (0x.*/\1/p' | paste -sd,)
		# objdump 2.47.50 reads V2 too: an independent check.
		grep -q 'Version: SFRAME_VERSION_2' <<<"$("$SID/objdump" --sframe=.sframe "$b")" ||
			{ echo "build.sh: objdump 2.47.50 disagrees on $1" >&2; exit 1; }
		;;
	*)
		case $1 in
		*binutils244*) dump=$TRIXIE/objdump ;;
		*binutils247*) dump=$SID/objdump ;;
		*) dump=/usr/bin/objdump ;;
		esac
		ver=$("$dump" --sframe=.sframe "$b" | sed -n 's/^ *Version: SFRAME_VERSION_\([0-9]\)/V\1/p')
		flags=$("$dump" --sframe=.sframe "$b" | sed -n '/^ *Flags:/,/^ *CFA/p' |
			grep -o 'SFRAME_F_[A-Z_]*' | paste -sd,)
		;;
	esac
	[ "$ver" = "$want" ] || { echo "build.sh: $1 has SFrame $ver, not $want" >&2; exit 1; }
	if grep -q GNU_SFRAME <<<"$("$SID/readelf" -lW "$b")"; then pt=PT_GNU_SFRAME; else pt="no PT_GNU_SFRAME"; fi
	case $1 in
	*clang22*) [ "$pt" = "no PT_GNU_SFRAME" ] ;;
	*) [ "$pt" = PT_GNU_SFRAME ] ;;
	esac || { echo "build.sh: $1: $pt" >&2; exit 1; }
	! grep -Eq '\.debug_(info|line)' <<<"$("$SID/readelf" -SW "$b")" ||
		{ echo "build.sh: $1 has debug info" >&2; exit 1; }
	grep -q '\.symtab' <<<"$("$SID/readelf" -SW "$b")" ||
		{ echo "build.sh: $1 has no .symtab" >&2; exit 1; }
	echo "$ver; $flags; $pt; $(fde_order "$b")"
}

# Whether the FDEs are in address order (binary search needs it; the flag
# SFRAME_F_FDE_SORTED only says so), from objdump 2.47.50's function index.
fde_order() {
	local idx pc prev=-1 bad=0 n=0
	while read -r idx pc; do
		if [ $((16#$pc)) -lt $prev ]; then bad=$((bad + 1)); fi
		prev=$((16#$pc)) n=$((n + 1))
	done < <("$SID/objdump" --sframe=.sframe "$1" |
		 sed -n 's/.*func idx \[\([0-9]*\)\]: pc = 0x\([0-9a-f]*\),.*/\1 \2/p')
	if [ $bad -gt 0 ]; then
		echo "FDEs NOT in address order ($bad of $n go back)"
	else
		echo "FDEs in address order"
	fi
}

declare -A SFRAME
for p in "${PROGS[@]}"; do
	b=${p%%:*} v=${p#*:}
	SFRAME[$b]=$(check "$b" "${v%%:*}")
done

{
	if [ "$ARCH" = arm64 ]; then
		echo "# Generated by harness/producers/build.sh (PRODUCER_ARCH=arm64). Static, non-PIE,"
		echo "# -O2 -fomit-frame-pointer, .symtab kept, no debug info. Copied into the arm64"
		echo "# guest's /selftests by make check-arm64. No clang program (see build.sh)."
		echo "# (sid's binutils move on: the V3 program follows them.)"
		echo "gcc:           $("$CC" --version | head -1)"
		echo "binutils 2.44: $("$TRIXIE/as" --version | head -1); $("$TRIXIE/ld" --version | head -1)"
		echo "binutils 2.47: $("$SID/as" --version | head -1); $("$SID/ld" --version | head -1)"
		echo "dumpers:       objdump --sframe of the producer's aarch64 binutils"
	else
		echo "# Generated by harness/producers/build.sh. Static, non-PIE, -O2 -fomit-frame-pointer,"
		echo "# .symtab kept, no debug info. Copied into the guest's /selftests by make selftests."
		echo "# (sid's binutils move on: the V3 program follows them.)"
		echo "gcc:           $(gcc --version | head -1)"
		echo "g++:           $(g++ --version | head -1)"
		echo "binutils 2.40: $(as --version | head -1); $(ld --version | head -1)"
		echo "binutils 2.44: $("$TRIXIE/as" --version | head -1); $("$TRIXIE/ld" --version | head -1)"
		echo "binutils 2.47: $("$SID/as" --version | head -1); $("$SID/ld" --version | head -1)"
		echo "clang:         $(clang-22 --version | head -1)"
		echo "lld:           $(ld.lld-22 --version | head -1)"
		echo "dumpers:       objdump --sframe of the producer's binutils; llvm-readelf-22 --sframe"
		echo "               (checked with objdump 2.47.50) for clang"
	fi
	echo
	echo "# binary | producer | SFrame version; header flags; segment; FDE order | bytes | sha256"
	for p in "${PROGS[@]}"; do
		b=${p%%:*} v=${p#*:}
		echo "$b | ${v#*:} | ${SFRAME[$b]} | $(stat -c %s "$BIN/$b") | $(sha256sum "$BIN/$b" | cut -d' ' -f1)"
	done
} >"$BIN/MANIFEST.new"
mv "$BIN/MANIFEST.new" "$BIN/MANIFEST"
log "done: $(ls "$BIN"/*_test | wc -l) programs, $(du -sh "$BIN" | cut -f1); see $BIN/MANIFEST"
