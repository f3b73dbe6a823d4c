#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make oracle` and `make oracle-arm64` (installed as
# /selftests/guest-oracle.sh, run by /init in experiment mode with its
# output on ttyS1). Profiles programs with perf record --call-graph dwarf
# --user-callchains: every sample carries both the user stack the kernel
# unwound at sample time and a copy of the stack, which perf unwinds with
# DWARF (libdw). ORACLE_SET (oracle.env) says which programs:
#
#   debian  three unmodified Debian programs; the LD_AUDIT module registers
#           every loaded object's section, synthesized from its .eh_frame
#   arm64   ORACLE_PROGRAMS: the demo workload built with --gsframe, static
#           (one for each of the producers), and dynamic against Debian's arm64 libc,
#           whose table (synthesized on the host) sframe-attach attached
#           to the file first
#
# For each program it prints perf script's output (kernel frames, then
# DWARF frames) and the raw callchains of perf report -D (how many frames
# are the kernel's), gzip + base64
# (harness/guest-lib.sh's guest_block), between markers for demo/oracle.py:
#
#   ### oracle-run NAME rc=R samples=N
#   ### oracle-script NAME begin ... end
#   ### oracle-raw NAME begin ... end
# shellcheck source=harness/guest-lib.sh
. /selftests/guest-lib.sh
ORACLE_FREQ=500
ORACLE_SET=debian
[ -f $D/oracle.env ] && . $D/oracle.env

echo "### oracle-start $(uname -r) $(perf version 2>&1)"
guest_perf_setup
echo Y >/sys/module/kernel/parameters/unwind_user_nmi_sframe
# perf script and perf report start addr2line for source lines; the guest
# has none, and a write to the dead child killed perf report with SIGPIPE
# (report_rc=141) after a few of python3's samples. Ignored, it is EPIPE.
trap '' PIPE

audit="env LD_AUDIT=$D/unwind_user_audit.so UNWIND_USER_SFRAME_CACHE=$D/sframe-cache UNWIND_USER_AUDIT_DEBUG=1"

profile() {
	name=$1
	shift
	# cpu-clock: no hardware PMU under TCG. 16 KiB of stack a sample:
	# these programs' C stacks are shallow (CPython 3.11 does not recurse
	# in C for Python-to-Python calls). -N: no build-id cache.
	perf record -e cpu-clock:u -F "$ORACLE_FREQ" --call-graph dwarf,16384 \
		--user-callchains -N -o $name.data -- "$@" >$name.out 2>$name.err
	rc=$?
	perf script --ns --no-inline -i $name.data -F comm,tid,time,ip,sym,symoff,dso \
		>$name.txt 2>$name.script-err
	# The raw samples: header line (time, pid/tid) and callchain entries.
	perf report -D -i $name.data 2>$name.report-err >$name.dump
	rrc=$?
	grep -E 'PERF_RECORD_SAMPLE|FP chain|^\.\.\.\.\. +[0-9]+: ' $name.dump >$name.raw
	echo "### oracle-run $name rc=$rc report_rc=$rrc samples=$(grep -c PERF_RECORD_SAMPLE $name.raw) dump_lines=$(wc -l <$name.dump)"
	tail -3 $name.dump | cut -c1-200 | sed "s/^/# $name dump tail: /"
	rm -f $name.dump
	sed "s/^/# $name: /" $name.out $name.err $name.script-err $name.report-err | head -20 |
		tr -d '\000-\010\016-\037\177-\377'
	echo
	guest_block oracle-script $name $name.txt
	guest_block oracle-raw $name $name.raw
	rm -f $name.data $name.txt $name.raw
}

if [ "$ORACLE_SET" = arm64 ]; then
	# The guest's libc and ld.so, and the sections the host made for them.
	$D/sframe-attach /lib/aarch64-linux-gnu/libc.so.6 $D/sframe-cache/$LIBC_SECTION
	$D/sframe-attach /lib/ld-linux-aarch64.so.1 $D/sframe-cache/$LDSO_SECTION
	for p in $ORACLE_PROGRAMS; do
		profile $p $D/$p "$ORACLE_SECONDS"
	done
	echo "### oracle-end"
	exit 0
fi
# An input for xz: perf itself, 2 MiB of it.
head -c 2097152 $D/perf >xz.in
profile xz $audit /usr/bin/xz -6 -T1 -k -f xz.in
profile sqlite3 $audit /usr/bin/sqlite3 :memory: \
	"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
	 SELECT count(*), sum(length(printf('%08x', x * 2654435761))) FROM c;"
profile python3 $audit /usr/bin/python3.11 -S -c "
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
for _ in range(4):
    fib(19)
d = {}
for i in range(60000):
    d[str(i)] = sorted(str(i * 7919))
"
# What the module adds to a program's start: curl (33 objects, each
# registered from the cache) started N times with and without it.
N=20
# (busybox date has no %N: /proc/uptime, in hundredths of a second.)
now_cs() {
	read -r up _ </proc/uptime
	echo "${up%.*}${up#*.}"
}
start_ms() {
	t0=$(now_cs)
	i=0
	while [ $i -lt $N ]; do
		"$@" /usr/bin/curl --version >/dev/null 2>&1 || return 1
		i=$((i + 1))
	done
	echo $((($(now_cs) - t0) * 10))
}
# The module with an empty cache: all it does but map and register the
# sections.
empty="env LD_AUDIT=$D/unwind_user_audit.so UNWIND_USER_SFRAME_CACHE=/nonexistent"
for round in 1 2 3; do
	plain=$(start_ms env)
	audited=$(start_ms $audit)
	unregistered=$(start_ms $empty)
	echo "### oracle-startup round=$round runs=$N plain_ms=${plain:-failed} audit_ms=${audited:-failed} empty_cache_ms=${unregistered:-failed} audit_failures=$($audit /usr/bin/curl --version 2>&1 | grep -c unwind_user_audit)"
done
echo "### oracle-end"
