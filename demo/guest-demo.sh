#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make demo` (installed as /selftests/guest-demo.sh, run by
# /init in experiment mode with its output on ttyS1).  Profiles the workload
# seven ways with the real perf tool and prints, for each, a summary line and
# perf script's output (gzip + base64, harness/guest-lib.sh's guest_block)
# between markers for the host to split:
#
#   ### demo-run MODE seconds=S bytes=B
#   ### demo-script MODE begin ... ### demo-script MODE end
#
# DEMO_SECONDS (from /selftests/demo.env if the host wrote one, default 8)
# is how long the workload runs per profile; PYTORTURE_SECONDS (60) how long
# the Python torture run lasts, sampled at PYTORTURE_FREQ (10000) a second.
# shellcheck source=harness/guest-lib.sh
. /selftests/guest-lib.sh
DEMO_SECONDS=8
DEMO_FREQ=4000
PYTORTURE_SECONDS=60
PYTORTURE_FREQ=10000
PYCOST_ROUNDS=200
[ -f $D/demo.env ] && . $D/demo.env
secs=$DEMO_SECONDS

echo "### demo-start $(uname -r) $(perf version 2>&1)"
guest_perf_setup

# Sample-time (NMI/IRQ) SFrame in perf_callchain_user(): off for the fp
# row, which is what a kernel without this series does.
NMI_SFRAME=/sys/module/kernel/parameters/unwind_user_nmi_sframe
# The audit rows: the same deferred SFrame unwind, then the sample-time one
# (plain --call-graph fp), with the LD_AUDIT module registering libc's and
# ld.so's sections synthesized from .eh_frame.
modes="fp sframe nmi dwarf"
[ -f $D/unwind_user_audit.so ] && modes="$modes audit auditnmi"
# The interpreter rows: Debian's lua5.4 running interp.lua (its libraries
# registered by the LD_AUDIT module in both), without and with the module
# that answers user-assisted unwinding requests with the Lua functions.
[ -x $D/lua5.4 ] && [ -f $D/unwind_assist.so ] && modes="$modes luaplain lua"
# The Python rows: Debian's python3.11 running pywork.py without and with
# tools/unwind_user/python's extension (python3 -m unwind_assist), and the
# torture run (pytorture.py, sampled at PYTORTURE_FREQ, no perf script).
[ -x /usr/bin/python3.11 ] && [ -d $D/pyassist ] && modes="$modes pyplain py pytorture"
# The cost row: PYCOST_ROUNDS rounds (demo.env), if any.
[ -x /usr/bin/python3.11 ] && [ -d $D/pyassist ] && [ "$PYCOST_ROUNDS" -gt 0 ] && modes="$modes pycost"
# The per-file row: the same deferred unwind of the whole machine (perf
# record -a), with no LD_AUDIT and no prctl (the library's own
# registration off), with the machine's provider of file tables up as its
# systemd unit runs it (sframe-synth serve): the kernel asks it for the
# table of each file a walk meets with none (libc's and ld.so's, perf's
# own libraries', ...), imgdemo's and libfilter.so's come from their own
# sections. Last: the tables stay attached.
[ -x $D/sframe-synth ] && modes="$modes file"
# DEMO_MODES (demo.env): only these.
[ -n "${DEMO_MODES:-}" ] && modes=$DEMO_MODES
# The module is in perf's environment too, as when LD_AUDIT is set for a
# whole session (the cache has perf's libraries): the workload perf starts
# inherits it, and the profile is of the same command in every row, not of
# an `env` run before it.
audit="env LD_AUDIT=$D/unwind_user_audit.so UNWIND_USER_SFRAME_CACHE=$D/sframe-cache UNWIND_USER_AUDIT_DEBUG=1"
for m in $modes; do
	pre=
	cmd="$D/imgdemo $secs"
	case $m in
	fp)	cg=fp; echo N >$NMI_SFRAME ;;
	sframe)	cg=fp,defer ;;
	nmi)	cg=fp; echo Y >$NMI_SFRAME ;;
	dwarf)	cg=dwarf ;;
	audit)	cg=fp,defer; echo N >$NMI_SFRAME; pre=$audit ;;
	auditnmi) cg=fp; echo Y >$NMI_SFRAME; pre=$audit ;;
	file)	cg=fp,defer; echo N >$NMI_SFRAME; pre="env LIBFILTER_NO_REGISTER=1" ;;
	luaplain) cg=fp,defer; echo N >$NMI_SFRAME; pre=$audit
		cmd="$D/lua5.4 $D/interp.lua $secs" ;;
	lua)	cg=fp,defer; echo N >$NMI_SFRAME; pre="$audit LUA_CPATH=$D/unwind_assist.so UNWIND_ASSIST_DEBUG=1"
		cmd="$D/lua5.4 -l unwind_assist $D/interp.lua $secs" ;;
	pyplain) cg=fp,defer; echo N >$NMI_SFRAME; pre=$audit
		cmd="/usr/bin/python3.11 -S $D/pywork.py $secs" ;;
	py)	cg=fp,defer; echo N >$NMI_SFRAME
		pre="$audit PYTHONPATH=$D/pyassist UNWIND_ASSIST_DEBUG=1"
		cmd="/usr/bin/python3.11 -S -m unwind_assist $D/pywork.py $secs" ;;
	pytorture) cg=fp,defer; echo N >$NMI_SFRAME
		pre="$audit PYTHONPATH=$D/pyassist UNWIND_ASSIST_DEBUG=1"
		# A hang is a failure too: four times its time at most.
		cmd="timeout -s KILL $((PYTORTURE_SECONDS * 4)) /usr/bin/python3.11 -S -m unwind_assist"
		cmd="$cmd $D/pytorture.py $PYTORTURE_SECONDS" ;;
	esac
	# The per-file row records the whole machine and keeps imgdemo's
	# samples; the provider is up before the clock starts, and nothing
	# is attached: its tables come when the kernel asks.
	all= comms=
	if [ $m = file ]; then
		all=-a comms="--comms imgdemo"
		$D/sframe-synth serve --cache /tmp/sframe-serve >$m.serve 2>&1 &
		serve=$!
		i=0
		until grep -q '^serve: providing' $m.serve || [ $i -ge 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
	fi
	t0=$(date +%s)
	if [ $m = pycost ]; then
		# What the answers cost: PYCOST_ROUNDS rounds of pywork.py's work
		# in one thread, under perf record -F 1000 --call-graph fp,defer,
		# without and with the extension, three times each, interleaved.
		for r in 1 2 3; do
			for v in plain ext; do
				pre=$audit
				cmd="/usr/bin/python3.11 -S $D/pywork.py --rounds $PYCOST_ROUNDS"
				[ $v = ext ] && pre="$audit PYTHONPATH=$D/pyassist UNWIND_ASSIST_DEBUG=1" &&
					cmd="/usr/bin/python3.11 -S -m unwind_assist $D/pywork.py --rounds $PYCOST_ROUNDS"
				$pre perf record -e cpu-clock:u -F 1000 --call-graph fp,defer -N -o $m.data \
					-- $cmd >$m.out 2>$m.err
				echo "### demo-cost $v rc=$? $(grep -h '^pywork:\|answers=' $m.out $m.err |
					tr '\n' ' ' | tr -d '\000-\010\016-\037\177-\377')"
				rm -f $m.data
			done
		done
		continue
	fi
	if [ $m = pytorture ]; then
		# Recorded to a pipe, counted and dropped: a minute at this rate
		# would not fit in the guest's memory. The script reports on
		# stderr, as stdout is perf's stream.
		{
			$pre perf record -e cpu-clock:u -F "$PYTORTURE_FREQ" --call-graph $cg -N \
				-o - -- $cmd 2>$m.err
			echo $? >$m.rc
		} | wc -c >$m.bytes
		t1=$(date +%s)
		echo "### demo-run $m rc=$(cat $m.rc) callgraph=$cg freq=$PYTORTURE_FREQ record_s=$((t1 - t0)) bytes=$(cat $m.bytes)"
		sed "s/^/# $m: /" $m.err | grep -v 'libbpf support\|schedstat' | head -40 |
			tr -d '\000-\010\016-\037\177-\377'
		continue
	fi
	# cpu-clock: there is no hardware PMU under TCG.  -N: no build-id cache.
	$pre perf record $all -e cpu-clock:u -F "$DEMO_FREQ" --call-graph $cg -N -o $m.data \
		-- $cmd >$m.out 2>$m.err
	rc=$?
	t1=$(date +%s)
	if [ $m = file ]; then
		kill $serve
		wait $serve 2>/dev/null
		sed "s/^/# $m: /" $m.serve | head -40
	fi
	# --no-inline: the guest has no addr2line, and perf script dies of
	# SIGPIPE when it tries to use one.
	# shellcheck disable=SC2086
	perf script $comms --no-inline --show-lost-events -i $m.data -F comm,tid,time,event,ip,sym,dso \
		>$m.txt 2>$m.script-err
	src=$?
	t2=$(date +%s)
	echo "### demo-run $m rc=$rc callgraph=$cg record_s=$((t1 - t0)) script_s=$((t2 - t1)) script_rc=$src bytes=$(stat -c %s $m.data) lines=$(wc -l <$m.txt)"
	{
		sed "s/^/# $m: /" $m.out $m.err | grep -v 'libbpf support\|schedstat' | head -20
		sed "s/^/# $m script: /" $m.script-err | head -5
	} | tr -d '\000-\010\016-\037\177-\377'
	guest_block demo-script $m $m.txt
	# DEMO_KEEP_DATA=1 (demo.env): perf.data and perf maps too, to debug
	# perf on the host.
	if [ "${DEMO_KEEP_DATA:-}" = 1 ]; then
		tar -c $m.data perf-*.map 2>/dev/null | guest_block demo-data $m
	fi
	rm -f $m.data $m.txt
done
echo "### demo-end"
