#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: host tests, series checks, one guest boot with KUnit and the
# kselftests, then one summary over all suites.
#
# Usage: check.sh REPO KBUILD_DIR BOOT_TIMEOUT
#   (from the Makefile's check target, after what it builds). What has a
#   target of its own (host-test, kernel-clippy, demo) runs by that target
#   ($MAKE, the calling make), with its outputs in the logs.
set -uo pipefail
REPO=$1 KB=$2 TIMEOUT=$3
MAKE=${MAKE:-make}
SRC=$KB/src OUT=$KB/build GUEST=$KB/guest LOGS=$KB/check
rm -rf "$LOGS"
mkdir -p "$LOGS"

echo "check: kernel source $(cat "$SRC/.debian-version"), logs in $LOGS"

# 1. Host: the decoder's cargo tests (oracle corpus, hostile input,
#    properties), then sframe-synth's (round trips on Debian's libraries).
"$MAKE" -s -C "$REPO" host-test HOST_TEST_LOG="$LOGS/host-test.log" \
	PY_TEST_LOG="$LOGS/py-test.log" >/dev/null 2>&1

# 2. The series: it must `git am` onto the pristine tree and give exactly the
#    tree we built; checkpatch --strict must find no error in it.
{
	wt=$KB/am-check
	if [ ! -d "$wt" ]; then
		git -C "$SRC" worktree add -q --detach "$wt" pristine
	fi
	git -C "$wt" am --abort >/dev/null 2>&1
	git -C "$wt" checkout -q -f --detach pristine && git -C "$wt" clean -qfdx
	if git -C "$wt" am -q "$KB"/series/*.patch; then
		if [ "$(git -C "$wt" rev-parse HEAD^{tree})" = "$(git -C "$SRC" rev-parse HEAD^{tree})" ]; then
			echo "ok 1 git-am: series applies to pristine and gives the built tree"
		else
			echo "not ok 1 git-am: series applies but the tree differs from the built one"
		fi
	else
		echo "not ok 1 git-am: series does not apply to pristine"
		git -C "$wt" am --abort >/dev/null 2>&1
	fi
	# mm's user-space VMA tests build mm/vma.c against stubs, one of which
	# the series adds (the registry's munmap hook): they must still build
	# and pass.
	if make -C "$wt/tools/testing/vma" -j"$(nproc)" >"$LOGS/vma.log" 2>&1 &&
		(cd "$wt/tools/testing/vma" && ./vma) >>"$LOGS/vma.log" 2>&1; then
		echo "ok 2 tools/testing/vma: $(tail -1 "$LOGS/vma.log")"
	else
		echo "not ok 2 tools/testing/vma: see $LOGS/vma.log"
		tail -5 "$LOGS/vma.log" | sed 's/^/#   /'
	fi
	git -C "$wt" clean -qfdx
	i=2
	for p in "$KB"/series/*.patch; do
		n=$(basename "$p")
		i=$((i + 1))
		# (from $LOGS: checkpatch leaves a cache file in its working directory)
		if (cd "$LOGS" && "$SRC/scripts/checkpatch.pl" --strict --no-tree -q --terse \
			--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG "$p") >"$LOGS/checkpatch-$n.log" 2>&1; then
			echo "ok $i checkpatch $n"
		elif grep -q ': ERROR:' "$LOGS/checkpatch-$n.log"; then
			echo "not ok $i checkpatch $n"
			sed 's/^/#   /' "$LOGS/checkpatch-$n.log"
		else
			echo "ok $i checkpatch $n # $(grep -c ': \(WARNING\|CHECK\):' "$LOGS/checkpatch-$n.log") warnings"
		fi
	done
} >"$LOGS/series.log" 2>&1

# 2b. Lint: rustfmt and clippy on the Rust, kernel style (the kernel's own
#     clippy lints, CLIPPY=1) and host style for the decoder crate.
{
	i=0
	lint() {
		i=$((i + 1))
		if "${@:2}" >"$LOGS/lint-$i.log" 2>&1; then
			echo "ok $i $1"
		else
			echo "not ok $i $1"
			tail -20 "$LOGS/lint-$i.log" | sed 's/^/#   /'
		fi
	}
	lint "kernel/unwind_user's modules import without a cycle (KUnit tests apart)" \
		python3 "$REPO/harness/module-graph.py" "$REPO/kernel/unwind_user"
	lint "rustfmt kernel/unwind_user" rustfmt --check --edition 2021 \
		--config-path "$SRC/.rustfmt.toml" "$REPO"/kernel/unwind_user/*.rs
	lint "cargo fmt rust/sframe" sh -c "cd '$REPO/rust/sframe' && cargo fmt --check"
	lint "cargo clippy rust/sframe" sh -c \
		"cd '$REPO/rust/sframe' && cargo clippy --all-targets -q -- -D warnings"
	lint "kernel clippy (CLIPPY=1) kernel/unwind_user rust/sframe.o" sh -c \
		"$MAKE -C '$REPO' kernel-clippy 2>&1 | tee /dev/stderr | \
		{ ! grep -q '^warning\\|^error'; }"
} >"$LOGS/lint.log" 2>&1

# 3. Boot: KUnit runs at boot (console), the kselftests from /init (results).
"$REPO/harness/run-guest.sh" "$OUT/arch/x86/boot/bzImage" "$GUEST/initramfs.cpio.gz" \
	"$LOGS/guest" test "$TIMEOUT"
echo $? >"$LOGS/guest/rc"

# 4. The real perf tool (tools/perf of the same tree) in a second boot: the
#    demo workload, built without frame pointers, profiled with
#    --call-graph fp,defer (deferred SFrame) and with plain --call-graph fp
#    (SFrame at sample time) must show the expected frames in perf script's
#    own output; the frame-pointer-only run is reported beside them.
#    At host time (DEMO_ICOUNT empty), as make check always ran it.
mkdir -p "$LOGS/demo"
DEMO_SECONDS=3 "$MAKE" -s -C "$REPO" demo DEMO_OUT="$LOGS/demo" DEMO_ICOUNT= >"$LOGS/demo.log" 2>&1
echo $? >"$LOGS/demo/rc"
{
	if [ "$(cat "$LOGS/demo/rc")" = 0 ]; then
		echo "ok 1 perf demo ran: $(grep '^demo: complete_stacks' "$LOGS/demo.log")"
	else
		echo "not ok 1 perf demo did not complete (see $LOGS/demo.log)"
	fi
	if r=$("$REPO/demo/check-perf.sh" "$LOGS/demo/run/results.log" 2>&1); then
		echo "ok 2 perf script shows the SFrame stacks: ${r#ok - }"
	else
		echo "not ok 2 perf script: ${r#not ok - }"
	fi
	# Plain --call-graph fp, no defer: SFrame at sample time (NMI/IRQ).
	if r=$(PERF_RUN=nmi "$REPO/demo/check-perf.sh" "$LOGS/demo/run/results.log" 2>&1); then
		echo "ok 3 perf script, plain -g, shows the SFrame stacks: ${r#ok - }"
	else
		echo "not ok 3 perf script, plain -g: ${r#not ok - }"
	fi
	# User-assisted unwinding: Debian's lua5.4 with tools/unwind_user/lua's
	# module; its Lua functions, in calling order, in place of the
	# interpreter's loop in the kernel's walk, in most samples (a few land
	# in start-up and exit); no native callee below a Lua function; none
	# named without the module.
	# fields_hold LINE CONDITION: whether awk's CONDITION holds of the
	# KEY=VALUE fields of LINE (v["KEY"]).
	fields_hold() {
		echo "$1" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
			END { exit !('"$2"') }'
	}
	r=$(grep '^demo: interpreter' "$LOGS/demo.log" || echo "no interpreter rows")
	if fields_hold "$r" 'v["lua_right"] + 0 >= 90 && v["lua_callee_below"] == "0" &&
		v["without_module_named"] + 0 == 0'; then
		echo "ok 4 perf script names the Lua functions: ${r#demo: interpreter }"
	else
		echo "not ok 4 perf script, Lua: ${r#demo: }"
	fi
	# Debian's python3.11 with tools/unwind_user/python's extension: a
	# program with threads, recursion, generators, exceptions, C code
	# calling back into Python and subprocess children. Its functions in
	# calling order down to the module (or the thread's start) in >= 95% of
	# the samples in Python code, none in an order the program cannot have,
	# no native callee below a Python function, none at a wrong depth
	# (json's C encoder between its caller and callee), none named without
	# it, no child lost; and the torture run ends cleanly, with answers.
	r=$(grep '^demo: python' "$LOGS/demo.log" || echo "no python row")
	if fields_hold "$r" 'v["py_right"] + 0 >= 95 && v["py_bad_order"] == "0" &&
		v["py_callee_below"] == "0" && v["py_misplaced"] == "0" &&
		v["without_ext_named"] == "0.0%" && v["children_failed"] == "0"'; then
		echo "ok 5 perf script names the Python functions: ${r#demo: python }"
	else
		echo "not ok 5 perf script, Python: ${r#demo: }"
	fi
	if fields_hold "$r" 'v["torture_rc"] == "0" && v["torture_threads"] + 0 > 0 &&
		v["torture_built"] + 0 > 0'; then
		echo "ok 6 Python torture run under sampling ended cleanly: $(grep '^torture:' "$LOGS/demo.log")"
	else
		echo "not ok 6 Python torture run: $(grep '^torture:' "$LOGS/demo.log" || echo "no torture line")"
	fi
} >"$LOGS/perf.log"

# 4b. The whole machine: Debian programs started before profiling, one
#     agent run, one system-wide recording with the kernel's user stack
#     and perf's DWARF unwind of the same samples (demo/run-system.sh):
#     per program, >= 99 % of the samples equal and no wrong frame.
mkdir -p "$LOGS/system"
SYSTEM_BEFORE=0 SYSTEM_STARTUP=0 SYSTEM_FP=0 "$MAKE" -s -C "$REPO" system SYSTEM_OUT="$LOGS/system" \
	>"$LOGS/system.log" 2>&1
echo $? >"$LOGS/system/rc"
{
	i=0
	while read -r _ prog verdict rest; do
		i=$((i + 1))
		if [ "$verdict" = ok ]; then
			echo "ok $i system-wide $prog: $rest"
		else
			echo "not ok $i system-wide $prog: $rest"
		fi
	done < <(grep '^system-check ' "$LOGS/system.log")
	if [ "$i" = 0 ]; then
		echo "not ok 1 system-wide: no result (see $LOGS/system.log)"
		tail -5 "$LOGS/system.log" | sed 's/^/#   /'
	fi
	a=$(grep '^### system-agent' "$LOGS/system.log" || echo "no agent line")
	i=$((i + 1))
	if fields_hold "$a" 'v["attached"] + 0 > 0'; then
		echo "ok $i system-wide agent: ${a#\#\#\# system-agent }"
	else
		echo "not ok $i system-wide agent: ${a#\#\#\# system-agent }"
	fi
} >"$LOGS/system-check.log"

# 5. One summary.
PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" python3 -m harness.results "$LOGS"
