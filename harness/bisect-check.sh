#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bisect-check: every prefix of the series builds. Each commit of
# pristine..HEAD of the applied tree is checked out in KBUILD_DIR/bisect and
# built, in order and incrementally, in KBUILD_DIR/build-bisect with the
# test configuration (tinyconfig + harness/configs/qemu.config and
# tools/testing/selftests/unwind_user/config of
# this repository: the selftests' config comes late in the series, and its
# options for code not in a prefix yet are simply unknown there). One
# "ok N subject" or "not ok N subject" line a patch; the build logs stay
# in KBUILD_DIR/bisect-check/.
#
# Usage: bisect-check.sh REPO KBUILD_DIR JOBS
set -uo pipefail
REPO=$1 KB=$2 JOBS=$3
SRC=$KB/src WT=$KB/bisect OUT=$KB/build-bisect LOGS=$KB/bisect-check
FRAGMENTS="$REPO/harness/configs/qemu.config $REPO/tools/testing/selftests/unwind_user/config"
mkdir -p "$OUT" "$LOGS"

if [ ! -d "$WT" ]; then
	git -C "$SRC" worktree add -q --detach "$WT" pristine || exit 1
fi
kmake() {
	make -C "$WT" O="$OUT" -j"$JOBS" RUSTC=/usr/bin/rustc \
		RUSTDOC=/usr/bin/rustdoc BINDGEN="$HOME/.cargo/bin/bindgen" "$@"
}

n=0 failed=0
for c in $(git -C "$SRC" rev-list --reverse pristine..HEAD); do
	n=$((n + 1))
	subject=$(git -C "$SRC" log -1 --format=%s "$c")
	log=$LOGS/$(printf %02d "$n").log
	git -C "$WT" checkout -q -f --detach "$c" && git -C "$WT" clean -qfdx
	# The same commands as make config: tinyconfig, the fragment merged
	# in, olddefconfig. Symbols that did not change keep their
	# include/config timestamps, so the build after stays incremental.
	if kmake tinyconfig >"$log" 2>&1 &&
	   "$WT/scripts/kconfig/merge_config.sh" -m -O "$OUT" "$OUT/.config" \
		$FRAGMENTS >>"$log" 2>&1 &&
	   kmake olddefconfig >>"$log" 2>&1 &&
	   kmake bzImage >>"$log" 2>&1; then
		echo "ok $n $subject"
	else
		echo "not ok $n $subject (see $log)"
		failed=$((failed + 1))
	fi
done
echo "bisect-check: $n patches, $((n - failed)) build, $failed do not"
[ "$failed" -eq 0 ]
