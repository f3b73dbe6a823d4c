#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench-hooks` (installed as /selftests/guest-hooks.sh
# and run by /init in experiment mode, output on ttyS1 = results.log): the
# same measurements, in interleaved rounds, on whichever kernel booted.
# shellcheck source=harness/guest-lib.sh
. /selftests/guest-lib.sh

ROUNDS=5
SPAWNS=100
MMAPS=2000
FORKS=200
LIBC=/lib/x86_64-linux-gnu/libc.so.6	# the host's, at the same path
[ -f $D/hooks.env ] && . $D/hooks.env

echo "### hooks-begin"
echo "hooks: kernel $(uname -v) unwinder=$([ -d /proc/sys/kernel ] && [ -e /proc/sys/kernel/unwind_user_file_tables_max ] && echo on || echo off)"
r=1
while [ $r -le $ROUNDS ]; do
	for what in "spawn $SPAWNS $D/true" "spawn $SPAWNS $D/true_sframe" \
		"mmap $MMAPS $LIBC" "mmap $MMAPS $D/true_sframe" "fork $FORKS"; do
		# shellcheck disable=SC2086 # op, count and file as words
		set -- $what
		out=$($D/hooks_bench "$@") || { echo "hooks: FAIL $what"; break 2; }
		echo "$out what=$(basename "${3:-none}") round=$r"
	done
	r=$((r + 1))
done
echo "### hooks-end"
