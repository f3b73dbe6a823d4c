#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench` (installed as /selftests/guest-bench.sh and run
# by /init in experiment mode, output on ttyS1 = results.log). Everything
# the host's report.py reads is a "bench: KEY k=v ..." line, a perf script
# output (gzip + base64, harness/guest-lib.sh's guest_block) between
# "### bench-script MODE begin/end" markers, or a kernel profile (perf
# report's text) between "### bench-profile UNWINDER begin/end" markers.
#
# The counts below come from /selftests/bench.env if the host wrote one.
# shellcheck source=harness/guest-lib.sh
. /selftests/guest-lib.sh

SHALLOW=4		# chain frames: 10 frames in all with the driver and libc's
DEEP=200		# 206 frames in all (the trigger keeps at most 512)
ROUNDS=7		# warm measurements per unwinder, interleaved
ITERS_SHALLOW=5000	# unwinds per warm measurement
ITERS_DEEP=250
COLD_REPS=200		# cold: re-register + 1 unwind, per unwinder
PROFILE_ITERS=300	# deep unwinds under perf, SFrame (fp: 8 times as many,
			# for about as many samples)
GROWTH_DEPTH=100
GROWTH_ITERS=200
GROWTH_ROUNDS=7		# rounds over all sizes, so that drift hits all alike
GROWTH_SIZES="10 100 1000 10000 100000"
MEM_K=50		# registrations per size for the memory figure
LEAK_ITERS=2000
EXEC_REPS=41
FIRST_REPS=5		# fresh copies whose first unwind builds their table
PERF_SECONDS=4
PERF_FREQ=10000
PERF_ROUNDS=2		# rounds over all perf modes, so that drift hits all alike
PHASES="step cold leak profile exec growth registration perf"
[ -f $D/bench.env ] && . $D/bench.env

# want PHASE: whether PHASES (bench.env) asks for it.
want() {
	case " $PHASES " in *" $1 "*) return 0 ;; esac
	return 1
}

# phase NAME: the previous phase's time; true if PHASES asks for NAME.
phase() {
	now=$(date +%s)
	[ -n "$phase_name" ] && echo "bench: phase name=$phase_name seconds=$((now - phase_t0))"
	phase_name= phase_t0=$now
	want $1 || return 1
	phase_name=$1
}

NMI_SFRAME=/sys/module/kernel/parameters/unwind_user_nmi_sframe

# perf_mode MODE: the call-graph option ($cg, empty: unprofiled) and the
# program ($prog) of an end-to-end mode (section b).
perf_mode() {
	prog=imgdemo
	case $1 in
	none*)		cg= ;;
	fp|nmisf)	cg=fp ;;
	sframe)		cg=fp,defer ;;
	dwarf)		cg=dwarf ;;
	fpb|fpbfp)	cg=fp prog=$D/fp/imgdemo ;;
	fpbdefer)	cg=fp,defer prog=$D/fp/imgdemo ;;
	esac
}

# perf_run MODE ROUND: one end-to-end run.
perf_run() {
	m=$1
	perf_mode $m
	# fp, fpbfp: the frame-pointer walk alone, as mainline's kernel has it.
	case $m in
	fp|fpbfp)	echo N >$NMI_SFRAME ;;
	*)		echo Y >$NMI_SFRAME ;;
	esac
	t0=$(date +%s)
	if [ -z "$cg" ]; then
		$prog "$PERF_SECONDS" >$m.out 2>$m.err
		rc=$?
		bytes=0
	else
		# cpu-clock: there is no hardware PMU under TCG. -N: no
		# build-id cache.
		perf record -e cpu-clock:u -F "$PERF_FREQ" --call-graph $cg -N -o $m.data \
			-- $prog "$PERF_SECONDS" >$m.out 2>$m.err
		rc=$?
		bytes=$(stat -c %s $m.data)
	fi
	t1=$(date +%s)
	work=$(sed -n 's/^imgdemo: \([0-9]*\) images in \([0-9.]*\) s.*/images=\1 seconds=\2/p' $m.out)
	echo "bench: perf mode=$m round=$2 callgraph=${cg:-none} rc=$rc $work bytes=$bytes wall_s=$((t1 - t0))"
	[ "$2" -eq 0 ] && sed "s/^/# $m: /" $m.out $m.err | grep -v 'libbpf support\|schedstat' |
		head -20 | tr -d '\000-\010\016-\037\177-\377'
	[ -z "$cg" ] && return
	if [ "$2" -eq 0 ]; then
		# --no-inline: the guest has no addr2line (perf script would
		# die of SIGPIPE trying to use one).
		perf script --no-inline --show-lost-events -i $m.data \
			-F comm,tid,time,event,ip,sym,dso >$m.txt 2>$m.script-err
		echo "bench: perf_script mode=$m rc=$? script_s=$(($(date +%s) - t1)) lines=$(wc -l <$m.txt)"
		guest_block bench-script $m $m.txt
		rm -f $m.txt
	else
		echo "bench: perf_samples mode=$m round=$2 samples=$(perf script -F tid -i $m.data 2>/dev/null | wc -l)"
	fi
	rm -f $m.data
}

echo "### bench-start"
echo "bench: guest kernel=$(uname -r) nproc=$(nproc) cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -1 | tr ' ' '_')"
echo "bench: config shallow=$SHALLOW deep=$DEEP rounds=$ROUNDS iters_shallow=$ITERS_SHALLOW iters_deep=$ITERS_DEEP cold_reps=$COLD_REPS profile_iters=$PROFILE_ITERS growth_depth=$GROWTH_DEPTH growth_iters=$GROWTH_ITERS growth_rounds=$GROWTH_ROUNDS mem_k=$MEM_K leak_iters=$LEAK_ITERS perf_seconds=$PERF_SECONDS perf_freq=$PERF_FREQ perf_rounds=$PERF_ROUNDS phases=$(echo $PHASES | tr ' ' ,)"
# perf needs the kernel's symbols (profiles) and no sampling restrictions.
guest_perf_setup

# a. The unwind step, SFrame against frame pointers, on the same stacks.
if phase step; then
	echo "bench: binary name=unwind_bench"
	unwind_bench info
	unwind_bench step $SHALLOW $ITERS_SHALLOW $ROUNDS
	unwind_bench step $DEEP $ITERS_DEEP $ROUNDS
	unwind_bench uncovered $DEEP $ITERS_DEEP $ROUNDS
fi
if phase cold; then
	unwind_bench cold $SHALLOW $COLD_REPS
	unwind_bench cold $DEEP $COLD_REPS
	unwind_bench cold_file $SHALLOW $COLD_REPS
	unwind_bench cold_file $DEEP $COLD_REPS
fi
if phase leak; then
	unwind_bench leak $DEEP $LEAK_ITERS
fi

# Where the kernel spends the time of each unwinder: perf's own profile of
# the deep loop, kernel and user, self time by symbol.
if phase profile; then
	for u in sframe fp; do
		n=$PROFILE_ITERS
		[ $u = fp ] && n=$((PROFILE_ITERS * 8))
		perf record -e cpu-clock -F 2000 -N -o prof-$u.data \
			-- unwind_bench loop $u $DEEP $n >prof-$u.out 2>prof-$u.err
		cat prof-$u.out
		echo "### bench-profile $u begin"
		perf report -i prof-$u.data --stdio --no-children --sort sym -n --percent-limit 0.3 \
			2>/dev/null | grep '%'
		echo "### bench-profile $u end"
		rm -f prof-$u.data
	done
fi

# e. What exec pays for a program's section: fork + execve + exit of the
# programs with 1 MiB and 16 MiB of .sframe (26214 and 419430 functions,
# their PT_GNU_SFRAME as built), against the same programs without it,
# interleaved.
if phase exec; then
	for n in 26214 419430; do
		unwind_bench exec $D/growth_${n}_sframe $D/growth_${n}_nosframe $EXEC_REPS
	done
	# Where that work went: the first unwind of a fresh copy of each (a
	# new file), which builds its table, against the second.
	for n in 26214 419430; do
		unwind_bench first $D/growth_${n}_sframe $FIRST_REPS $GROWTH_DEPTH
	done
fi

# d. Growth: the same step against the number of functions, one round over
# all sizes at a time.
if phase growth; then
	for n in $GROWTH_SIZES; do
		echo "bench: binary name=growth_$n"
		growth_$n info
	done
	r=0
	while [ $r -lt $GROWTH_ROUNDS ]; do
		for n in $GROWTH_SIZES; do
			echo "bench: binary name=growth_$n"
			growth_$n step $GROWTH_DEPTH $GROWTH_ITERS 1 | sed "s/ round=0 / round=$r /"
		done
		r=$((r + 1))
	done
	echo "bench: binary name=unwind_bench"
fi

# c. Registration: time against section size, kernel memory per section.
if phase registration; then
	for n in 1 1000 10000 100000; do
		reps=20
		[ $n -ge 10000 ] && reps=10
		[ $n -ge 100000 ] && reps=5
		unwind_bench reg $n $reps
	done
	for r in 1 2 3; do
		unwind_bench mem 1 1000
	done
	for n in 1 1000 10000 100000; do
		# A process may hold 16 MiB of FDE tables (20 bytes a function):
		# 8 registrations of 100k functions.
		k=$MEM_K
		[ $n -ge 100000 ] && k=5
		unwind_bench mem $n $k
	done
fi

# b. End to end with perf, PERF_ROUNDS rounds over: unprofiled; frame
# pointers alone (plain --call-graph fp with SFrame off at sample time);
# SFrame deferred (fp,defer); SFrame at sample time (plain --call-graph
# fp); the same program built with frame pointers and without SFrame,
# profiled with --call-graph fp and fp,defer (what deferral itself costs,
# whatever the unwinder); DWARF. Then unprofiled once more. The first
# round's perf script outputs go to the host; the others' sample counts.
if phase perf; then
	# Keep -F as asked for every mode: without this the kernel lowers the
	# highest sample rate when sample handling is slow, as under TCG.
	echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent 2>/dev/null
	echo "bench: perfinfo version=$(perf version 2>&1 | tr ' ' '_')"
	r=0
	modes="none fp sframe nmisf fpbfp fpb fpbdefer dwarf"
	while [ $r -le $PERF_ROUNDS ]; do
		# One more unprofiled run after the last round.
		[ $r -eq $PERF_ROUNDS ] && modes=none
		for m in $modes; do
			perf_run $m $r
		done
		r=$((r + 1))
	done
	echo Y >$NMI_SFRAME
fi

phase end || true
echo "### bench-end"
