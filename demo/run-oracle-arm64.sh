#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make oracle-arm64: the kernel's user stacks on arm64 against perf's DWARF
# unwind of the same samples, as make oracle on x86. The demo workload,
# built by Debian's cross compiler with --gsframe, no frame pointers and
# signed return addresses (-mbranch-protection=standard):
#
#   imgdemo-static     static, SFrame V1 (binutils 2.40)
#   imgdemo-static-v2  static, SFrame V2 (trixie's binutils 2.44)
#   imgdemo-static-v3  static, SFrame V3 (sid's binutils 2.47.50)
#   imgdemo            dynamic (V1), against Debian's arm64 libc and ld.so,
#                      whose tables sframe-synth synthesizes here from their
#                      .eh_frame and demo/sframe-attach attaches to the
#                      files in the guest, as an agent does
#
# A static program's C library (Debian's libc.a) has no section: its
# stacks end at the first frame in that code, where DWARF goes on, and
# each function its section describes is listed for demo/oracle.py
# (--described). Each program is profiled once with perf record
# --call-graph dwarf --user-callchains (demo/guest-oracle.sh,
# ORACLE_SET=arm64) under qemu-system-aarch64 -cpu max; demo/oracle.py
# compares the stacks sample by sample and checks them (--min-equal 99:
# no wrong frame, 99 % of the samples whose DWARF unwind is whole equal).
# The staging, the boot and the report are harness/experiment.sh's.
#
# Every non-leaf function of the workload signs its return address
# (checked here: paciasp). perf's DWARF unwind strips the signatures:
# make perf-arm64 links elfutils 0.196's libdw, which does given the
# mask, and harness/perf-libdw-pac-mask.patch gives it the guest CPU's
# (Debian 12's libdw 0.188 did not, and went astray at the first signed
# return address). The C libraries are Debian 12's, which sign none: the
# dynamic program's libc frames, and the static ones' libc.a code, which
# their stacks end at anyway.
#
# Usage: run-oracle-arm64.sh IMAGE PERF_BINARY OUTDIR TIMEOUT ROOT KHDR
#   ROOT: Debian's arm64 busybox and libraries, unpacked (make
#   check-arm64's); KHDR: the arm64 kernel's installed uapi headers.
# Environment: ORACLE_FREQ, perf record -F (500); ORACLE_SECONDS, how long
#   each program runs (3); UNWIND_USER_TOOLCHAINS, where
#   rust/sframe/tests/corpus/toolchains.sh keeps the binutils it fetches.
set -euo pipefail
BZ=$1 PERF=$2 OUT=$3 TIMEOUT=$4 ROOT=$5 KHDR=$6
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=harness/experiment.sh
. "$HERE/../harness/experiment.sh"
CC=aarch64-linux-gnu-gcc
# The workload signs its return addresses (paciasp, .cfi_negate_ra_state).
PAC=-mbranch-protection=standard

experiment_begin oracle "$OUT"
TC=$("$REPO/rust/sframe/tests/corpus/toolchains.sh")
make -s -C "$HERE" O="$G" CC="$CC $PAC" all static
# static PROGRAM BINUTILS_DIR: the static program by those binutils,
# built anew (the demo's Makefile does not know which binutils built it).
static() {
	rm -rf "$OUT/build-$1"
	make -s -C "$HERE" O="$OUT/build-$1" CC="$CC $PAC -B $2" static
	cp "$OUT/build-$1/imgdemo-static" "$G/$1"
}
static imgdemo-static-v2 "$TC/trixie/aarch64"
static imgdemo-static-v3 "$TC/sid/aarch64"
# fdes PROGRAM OBJDUMP: the functions PROGRAM's section describes, as its
# producer's objdump reads them.
fdes() {
	"$2" --sframe=.sframe "$G/$1" |
		sed -n 's/.*func idx \[[0-9]*\]: pc = 0x\([0-9a-f]*\), size = \([0-9]*\) bytes/\1 \2/p' \
		>"$OUT/$1.fdes"
	[ -s "$OUT/$1.fdes" ] || { echo "oracle-arm64: $2 lists no function of $1" >&2; exit 1; }
}
# The workload's functions, in imgdemo and in libfilter.so; convolve_pixel
# is a leaf.
OURS=(main run_jobs process_image apply_filters compute_stats histogram)
LIBFILTER=(filter_image filter_pass filter_row)
# Each function of the workload must be described: stacks that end at
# one the assembler left out would pass as ending where the section ends.
described() {
	local sym addr start size found syms
	syms=$(aarch64-linux-gnu-nm "$G/$1")
	for sym in "${OURS[@]}" "${LIBFILTER[@]}" convolve_pixel; do
		addr=$(awk -v s="$sym" '$3 == s { print $1 }' <<<"$syms")
		found=
		while read -r start size; do
			if ((16#$addr >= 16#$start && 16#$addr < 16#$start + size)); then
				found=1
			fi
		done <"$OUT/$1.fdes"
		[ -n "$found" ] || { echo "oracle-arm64: $1's section leaves out $sym" >&2; exit 1; }
	done
}
# signs PROGRAM FUNCTION...: each FUNCTION signs its return address (a
# leaf saves none).
signs() {
	local sym
	for sym in "${@:2}"; do
		[[ $(aarch64-linux-gnu-objdump -d --disassemble="$sym" "$G/$1") == *paciasp* ]] ||
			{ echo "oracle-arm64: $1's $sym signs no return address" >&2; exit 1; }
	done
}
for p in imgdemo-static:aarch64-linux-gnu-objdump imgdemo-static-v2:"$TC/trixie/aarch64/objdump" \
	imgdemo-static-v3:"$TC/sid/aarch64/objdump"; do
	fdes "${p%%:*}" "${p#*:}"
	described "${p%%:*}"
	signs "${p%%:*}" "${OURS[@]}" "${LIBFILTER[@]}"
done
signs imgdemo "${OURS[@]}"
signs libfilter.so "${LIBFILTER[@]}"
$CC -O2 -Wall -Wextra -isystem "$KHDR" -o "$G/sframe-attach" "$HERE/sframe-attach.c"
# perf's DWARF unwind reads the programs' .eh_frame; the guest needs no
# debug info.
for p in perf imgdemo imgdemo-static imgdemo-static-v2 imgdemo-static-v3 libfilter.so; do
	src=$G/$p
	[ "$p" = perf ] && src=$PERF
	aarch64-linux-gnu-strip --strip-debug -o "$G/$p.tmp" "$src"
	mv "$G/$p.tmp" "$G/$p"
done
experiment_guest "$HERE/guest-oracle.sh"

# The sections of the guest's libc and ld.so, named by build ID in the cache.
LIBC=$ROOT/lib/aarch64-linux-gnu/libc.so.6 LDSO=$ROOT/lib/ld-linux-aarch64.so.1
export PATH=$HOME/.cargo/bin:$PATH
(cd "$REPO/tools/unwind_user/sframe_synth" && cargo build --release -q)
"$REPO/tools/unwind_user/sframe_synth/target/release/sframe-synth" \
	--cache "$G/sframe-cache" "$LIBC" "$LDSO" >"$OUT/synth.txt"
section() {
	local id
	id=$(aarch64-linux-gnu-readelf -n "$1" | sed -n 's/^ *Build ID: \([0-9a-f]*\)$/\1/p')
	[ -f "$G/sframe-cache/$id.sframe" ] ||
		{ echo "oracle-arm64: sframe-synth made no section for $1" >&2; exit 1; }
	echo "$id.sframe"
}
cat >"$G/oracle.env" <<EOF
ORACLE_SET=arm64
ORACLE_FREQ=${ORACLE_FREQ:-500}
ORACLE_SECONDS=${ORACLE_SECONDS:-3}
ORACLE_PROGRAMS="imgdemo-static imgdemo-static-v2 imgdemo-static-v3 imgdemo"
LIBC_SECTION=$(section "$LIBC")
LDSO_SECTION=$(section "$LDSO")
EOF

export GUEST_ARCH=arm64 GUEST_BUSYBOX=$ROOT/bin/busybox GUEST_SYSROOT=$ROOT
experiment_boot "$BZ" "$TIMEOUT"
experiment_report run_py demo.oracle "$OUT/run/results.log" "$OUT" --min-equal 99 \
	--described imgdemo-static="$OUT/imgdemo-static.fdes" \
	--described imgdemo-static-v2="$OUT/imgdemo-static-v2.fdes" \
	--described imgdemo-static-v3="$OUT/imgdemo-static-v3.fdes"
