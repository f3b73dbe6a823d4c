#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make profile` (installed as /selftests/guest-profile.sh
# and run by /init in experiment mode): one unwind_bench command, with
# SFrame walks only, while the host's QEMU plugin counts the kernel's
# instructions in each unwind_user_types() call. PROFILE (the command) is
# in /selftests/bench.env.
# shellcheck source=harness/guest-lib.sh
. /selftests/guest-lib.sh

PROFILE="cold_file 4 200"
[ -f $D/bench.env ] && . $D/bench.env
# shellcheck disable=SC2086 # the command's words
UNWIND_BENCH_ONLY=sframe unwind_bench $PROFILE
echo "### profile-end"
