#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The arm64 guests' root files (make check-arm64, make oracle-arm64,
# make bench-arm64): Debian's arm64 busybox and the libraries the dynamic
# programs and sframe-synth's round trip use, downloaded from the archive
# and unpacked into DIR, not installed. Complete once its last file is
# there; a second run does nothing.
#
# Usage: arm64-root.sh DIR
set -euo pipefail
DIR=$1
if [ ! -e "$DIR/.unpacked" ]; then
	rm -rf "$DIR"
	mkdir -p "$DIR/debs"
	(cd "$DIR/debs" && apt-get download -q busybox-static:arm64 libc6:arm64 \
		libstdc++6:arm64 libgcc-s1:arm64 zlib1g:arm64)
	for d in "$DIR"/debs/*.deb; do dpkg-deb -x "$d" "$DIR"; done
	touch "$DIR/.unpacked"
fi
