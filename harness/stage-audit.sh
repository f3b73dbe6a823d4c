#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Stage tools/unwind_user/audit, the LD_AUDIT module that registers every
# object a program loads with the SFrame section sframe-synth made from
# its .eh_frame, and the module's cache: the sections of OBJECTS.
#
# Usage: stage-audit.sh DIR KHDR_INCLUDES OBJECT...
#   DIR gets unwind_user_audit.so and sframe-cache/; KHDR_INCLUDES is how
#   the module's build finds linux/unwind_user.h (-isystem of an installed
#   kernel's headers, or -I of this repository's include/uapi).
#   sframe-synth's report goes to standard output. The guest must have
#   the same objects at the same paths (harness/mkinitramfs.sh's
#   extra-libs, which the caller writes: what a guest needs is not always
#   what the cache has).
# Used by make selftests, make kselftest-vng, make demo and make oracle.
set -euo pipefail
DIR=$1 KHDR=$2
shift 2
REPO=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$HOME/.cargo/bin:$PATH
mkdir -p "$DIR"
make -s -C "$REPO/tools/unwind_user/audit" OUTPUT="$DIR/" KHDR_INCLUDES="$KHDR"
(cd "$REPO/tools/unwind_user/sframe_synth" && cargo build --release -q)
"$REPO/tools/unwind_user/sframe_synth/target/release/sframe-synth" --cache "$DIR/sframe-cache" "$@"
# The agent itself, for sframe_file_test's run of sframe-synth attach --running.
cp "$REPO/tools/unwind_user/sframe_synth/target/release/sframe-synth" "$DIR/"
