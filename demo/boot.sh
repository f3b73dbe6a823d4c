#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Interactive guest with perf: boot the test kernel with the demo's initramfs
# (busybox, perf, the demo workload) plus any programs given, into a shell
# on this terminal.  Run `make demo` (or `make kernel perf` and this once
# after run-demo.sh) first.  Leave the guest with `poweroff -f`.
#
# Usage: demo/boot.sh [PROGRAM_OR_LIBRARY...]
#   The files land in /selftests in the guest; the shared libraries of
#   dynamically linked ones are copied from the host at the same paths.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KB=${KBUILD_DIR:-$HOME/.cache/unwind-user}
D=$KB/demo
BZ=${BZIMAGE:-$KB/build/arch/x86/boot/bzImage}
[ -x "$D/guest/selftests/perf" ] || { echo "boot: run 'make demo' first ($D/guest has no perf)" >&2; exit 1; }
rm -rf "$D/shell-guest"
mkdir -p "$D/shell-guest"
cp -a "$D/guest/selftests" "$D/shell-guest/"
# Shell mode: keep the tree clean of the experiment's guest side.
rm -f "$D/shell-guest/selftests/"{experiment,guest-demo.sh,guest-lib.sh}
for f in "$@"; do
	cp -L "$f" "$D/shell-guest/selftests/"
done
"$HERE/../harness/mkinitramfs.sh" "$D/shell-guest" "$D/shell-initramfs.cpio.gz"
exec "$HERE/../harness/run-guest.sh" "$BZ" "$D/shell-initramfs.cpio.gz" "$D/shell" shell 0
