#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Compare find() with libsframe's sframe_find_fre on the same V1 sections.
# Needs gcc and the host's libsframe.so.0 (Debian 12: binutils 2.40, V1 only).
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=/usr/lib/x86_64-linux-gnu/libsframe.so.0
if [ ! -e "$LIB" ]; then
	echo "libsframe.sh: $LIB not found; skipping the libsframe comparison" >&2
	exit 0
fi
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
gcc -O2 -o "$DIR/libsframe" benches/libsframe.c "$LIB"
cargo run -q --release --example bench -- --write-v1 "$DIR"
echo
echo "libsframe 2.40 sframe_find_fre (V1, same sections and PCs):"
for n in 1000 10000 100000; do
	printf "%8s  %s ns/find\n" "$n" "$("$DIR/libsframe" "$DIR/v1-$n.sframe" "$DIR/v1-$n.pcs")"
done
