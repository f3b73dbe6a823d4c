#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Generate the SFrame oracle corpus: build the programs in src/ with every
# SFrame producer we can get on Debian 12 into bin/, and each producer's own
# dump of their .sframe section into dump/.
#
#   v1       gcc 12 + host binutils 2.40        SFrame V1      objdump 2.40
#   v2       gcc 12 + trixie binutils 2.44      SFrame V2      objdump 2.44
#   v3       gcc 12 + sid binutils 2.47.50      SFrame V3      objdump 2.47.50
#   clang    clang-22 + ld.lld-22               SFrame V2 PCREL (unsorted flag)
#                                               llvm-readelf-22 and objdump 2.47.50
#   a64v2    clang-22 -S, trixie aarch64 as/ld  SFrame V2      objdump 2.44
#   a64v3    clang-22 -S, sid aarch64 as/ld     SFrame V3      objdump 2.47.50
#
# Every binary but the ld.lld ones also gets dump/NAME.libsframe: libsframe's
# own sframe_find_fre answer for every PC of every function (findfre.c).
#
# Nothing it writes is committed: make check (make corpus) runs it before
# the cargo tests, which read bin/ and dump/. Toolchains are fetched by
# toolchains.sh (apt-get download, nothing installed system-wide except
# clang-22/lld-22/llvm-22 from bookworm-security), the same the selftests of
# other producers are built with. About 20 s once they are fetched.
#
# Usage: generate.sh
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TC=$("$HERE/toolchains.sh")
SRC=$HERE/src
BIN=$HERE/bin
DUMP=$HERE/dump

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$SRC"/* "$HERE/findfre.c" "$WORK"/
cd "$WORK"

# MANIFEST, written last, says the corpus is whole (make's stamp for it).
rm -rf "$BIN" "$DUMP" "$HERE/MANIFEST"
mkdir -p "$BIN" "$DUMP"

# Reproducible output: no build ids, no absolute paths, no debug info.
COMMON="-O2 -fomit-frame-pointer -fasynchronous-unwind-tables -fno-stack-protector -Wl,--build-id=none -ffile-prefix-map=$WORK=."

declare -A GNU_B=([v1]="" [v2]="-B $TC/trixie/bin" [v3]="-B $TC/sid/bin")
declare -A GNU_OBJDUMP=([v1]=/usr/bin/objdump [v2]=$TC/trixie/bin/objdump [v3]=$TC/sid/bin/objdump)
OBJDUMP_SID=$TC/sid/bin/objdump

# dump BIN_NAME OBJDUMP: objdump --sframe of bin/BIN_NAME, run from bin/ so the
# file name line is stable.
dump_objdump() {
	(cd "$BIN" && "$2" --sframe=.sframe "$1") >"$DUMP/$1.objdump"
}
dump_llvm() {
	(cd "$BIN" && llvm-readelf-22 --sframe=.sframe "$1") >"$DUMP/$1.llvm-readelf"
}

log() { echo "generate: $*" >&2; }

for v in v1 v2 v3; do
	B=${GNU_B[$v]}
	CC="gcc $B $COMMON -Wa,--gsframe"
	log "gcc 12 + binutils for $v"
	$CC many.c -o "$BIN/many.$v"
	$CC -shared -fPIC libplt.c -o "$BIN/libplt.$v.so"
	cp "$BIN/libplt.$v.so" libplt.so
	$CC plt.c -L. -lplt -o "$BIN/plt.$v"
	$CC -fcf-protection=full -Wl,-z,ibtplt plt.c -L. -lplt -o "$BIN/plt-ibt.$v"
	$CC signal.c -o "$BIN/signal.$v"
	$CC -mstackrealign realign.c -o "$BIN/realign.$v"
	$CC -freorder-blocks-and-partition sections.c -o "$BIN/sections.$v"
	# gas warns about the CFI it cannot express in this SFrame version.
	$CC -nostdlib -static asm.S -o "$BIN/asm.$v" 2>/dev/null
	for b in many libplt.$v.so plt plt-ibt signal realign sections asm; do
		case $b in *.so) n=$b ;; *) n=$b.$v ;; esac
		dump_objdump "$n" "${GNU_OBJDUMP[$v]}"
	done
done

# V3 only: text more than 4 GiB above .sframe (64-bit function start offsets).
log "far text (V3)"
gcc ${GNU_B[v3]} $COMMON -Wa,--gsframe -nostdlib -static -DNO_HUGE asm.S \
	-Wl,--section-start=.text=0x180000000 -Wl,--section-start=.sframe=0x10000000 \
	-o "$BIN/far.v3" 2>/dev/null
dump_objdump far.v3 "${GNU_OBJDUMP[v3]}"

log "clang-22 + lld-22"
CLANG="clang-22 $COMMON -fuse-ld=lld -Wa,--gsframe -Wa,--allow-experimental-sframe"
$CLANG many.c -o "$BIN/many.clang" 2>/dev/null
$CLANG -shared -fPIC libplt.c -o "$BIN/libplt.clang.so"
cp "$BIN/libplt.clang.so" libplt.so
$CLANG plt.c -L. -lplt -o "$BIN/plt.clang"
$CLANG signal.c -o "$BIN/signal.clang"
$CLANG -mstackrealign realign.c -o "$BIN/realign.clang"
$CLANG sections.c -o "$BIN/sections.clang"
$CLANG -nostdlib -static asm.S -o "$BIN/asm.clang" 2>/dev/null
for n in many.clang libplt.clang.so plt.clang signal.clang realign.clang sections.clang asm.clang; do
	dump_llvm "$n"
	dump_objdump "$n" "$OBJDUMP_SID"
done

log "aarch64 (clang-22 -S, GNU as/ld)"
A64CC="clang-22 --target=aarch64-linux-gnu -O2 -fno-addrsig -fasynchronous-unwind-tables -ffreestanding -fno-stack-protector -S"
for pac in none a b; do
	case $pac in
	none) flags= ;;
	a) flags=-mbranch-protection=pac-ret ;;
	b) flags=-mbranch-protection=pac-ret+b-key ;;
	esac
	# GNU as does not know LLVM's build-attribute directives.
	$A64CC $flags a64.c -o - | grep -v '^[[:space:]]*\.aeabi_' >"a64-$pac.s"
	for v in v2 v3; do
		case $v in v2) suite=trixie ;; v3) suite=sid ;; esac
		n=a64-pac$pac.$v
		[ $pac != none ] || n=a64.$v
		"$TC/$suite/aarch64/as" --gsframe "a64-$pac.s" -o "a64-$pac-$v.o"
		"$TC/$suite/aarch64/ld" --build-id=none -static -o "$BIN/$n" "a64-$pac-$v.o"
		dump_objdump "$n" "$TC/$suite/aarch64/objdump"
	done
done

# Per-PC lookup oracle from libsframe itself (findfre.c), each section read
# by the libsframe of the binutils that wrote it: host 2.40 for V1, trixie
# 2.44 for V2, sid 2.47 for V3 (the latter two run with their own loader and
# libc). ld.lld's sections are skipped: libsframe refuses to search sections
# without the sorted flag.
log "libsframe lookup oracle"
SID=$TC/sid/root
TRIXIE=$TC/trixie/root
mkdir -p inc
printf '#define ATTRIBUTE_PACKED __attribute__((packed))\n#define ATTRIBUTE_UNUSED __attribute__((unused))\n' >inc/ansidecl.h
gcc -O2 -Iinc -I"$SID/usr/include" findfre.c -o findfre3 -L"$SID/usr/lib/x86_64-linux-gnu" -l:libsframe.so.3
gcc -O2 -DLIBSFRAME_244 findfre.c -o findfre2 "$TRIXIE/usr/lib/x86_64-linux-gnu/libsframe.so.1"
gcc -O2 -DLIBSFRAME_240 findfre.c -o findfre1 /usr/lib/x86_64-linux-gnu/libsframe.so.0
run_in() { "$1/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$1/usr/lib/x86_64-linux-gnu" "${@:2}"; }
for f in "$BIN"/*; do
	n=$(basename "$f")
	case $n in *.clang*) continue ;; esac
	case $n in a64*) objcopy=$TC/sid/aarch64/objcopy ;; *) objcopy=$TC/sid/bin/objcopy ;; esac
	"$objcopy" -O binary --only-section=.sframe "$f" sec.bin
	addr=$("$TC/sid/bin/readelf" -SW "$f" | sed -n 's/.*\] \.sframe *[^ ]* *\([0-9a-f]*\) .*/\1/p')
	case $n in
	*.v1*) ./findfre1 sec.bin "$addr" ;;
	*.v2*) run_in "$TRIXIE" ./findfre2 sec.bin "$addr" ;;
	*) run_in "$SID" ./findfre3 sec.bin "$addr" ;;
	esac >"$DUMP/$n.libsframe"
done

# Record what produced what.
{
	echo "# Generated by generate.sh; toolchain versions:"
	echo "gcc:            $(gcc --version | head -1)"
	echo "binutils v1:    $(as --version | head -1)"
	echo "binutils v2:    $("$TC/trixie/bin/as" --version | head -1)"
	echo "binutils v3:    $("$TC/sid/bin/as" --version | head -1)"
	echo "clang:          $(clang-22 --version | head -1)"
	echo "lld:            $(ld.lld-22 --version | head -1)"
	echo "llvm-readelf:   $(llvm-readelf-22 --version | grep -m1 -i version)"
	echo "aarch64 as v2:  $("$TC/trixie/aarch64/as" --version | head -1)"
	echo "aarch64 as v3:  $("$TC/sid/aarch64/as" --version | head -1)"
	echo "libsframe:      host 2.40 (V1), trixie $(basename "$(readlink -f "$TRIXIE"/usr/lib/x86_64-linux-gnu/libsframe.so.1)") (V2), sid $(basename "$(readlink -f "$SID"/usr/lib/x86_64-linux-gnu/libsframe.so.3)") (V3)"
	echo
	echo "# file  bytes  sframe-version  oracle dumps"
	for f in "$BIN"/*; do
		n=$(basename "$f")
		ver=$(grep -m1 -o 'SFRAME_VERSION_[0-9]' "$DUMP/$n.objdump" || true)
		dumps=$(cd "$DUMP" && ls "$n".* | tr '\n' ' ')
		echo "$n  $(stat -c %s "$f")  $ver  $dumps"
	done
} >"$HERE/MANIFEST"
log "done: $(ls "$BIN" | wc -l) binaries, $(du -sh "$BIN" | cut -f1)"
