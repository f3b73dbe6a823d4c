#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make system` (installed as /selftests/guest-system.sh, run
# by /init in experiment mode with its output on ttyS1): a machine whose
# programs were all started before anyone thought of profiling it, then
# profiled as a whole.
#
# Unmodified Debian programs, started first and left running: python3.11
# (a script, which reads the clock in a loop: the vDSO), sqlite3 (a query), xz (a stream), the same xz setuid root
# started by an unprivileged user (AT_SECURE: no LD_AUDIT for it), and
# two shell loops of short-lived xz processes. No LD_AUDIT anywhere. Then:
#
#   idle    nothing profiles: the loop's pace, for the cost of the others
#   before  perf record -a --call-graph dwarf --user-callchains: every
#           sample has the kernel's user stack and a stack copy that perf
#           unwinds with DWARF (libdw), before any table exists
#   agent   one run of `sframe-synth attach --running` (every file mapped
#           executable by a running process gets its synthesized table)
#   after   the same recording
#   startup curl's start-up with a table attached to each of its 33
#           objects against none
#   fp      perf record -a --call-graph fp,defer alone: its stacks, and
#           its cost
#
# For each recording it prints perf script's output and the raw callchains
# of perf report -D (how many frames are the kernel's), gzip + base64
# (guest_block), between markers for demo/system.py:
#
#   ### system-pids NAME=PID...
#   ### system-phase PHASE rc=R seconds=S loops=N data_kb=K
#   ### system-agent rc=R seconds=S attached=N skipped=N failed=N
#   ### system-startup round=R runs=N plain_ms=M attached_ms=M ...
#   ### system-script PHASE begin ... end
#   ### system-raw PHASE begin ... end
# shellcheck source=harness/guest-lib.sh
. /selftests/guest-lib.sh
SYSTEM_FREQ=100
SYSTEM_SECONDS=8
# make check's run skips what only gives figures: the "before" recording
# and curl's start-up.
SYSTEM_BEFORE=1
SYSTEM_STARTUP=1
SYSTEM_STARTUP_RUNS=10
[ -f $D/system.env ] && . $D/system.env

echo "### system-start $(uname -r) $(perf version 2>&1)"
guest_perf_setup
echo Y >/sys/module/kernel/parameters/unwind_user_nmi_sframe
# perf script and perf report start addr2line, which the guest lacks (see
# demo/guest-oracle.sh).
trap '' PIPE

# Inputs: 128 KiB of perf for each short-lived xz (about a second of
# TCG), perf again and again for the long-running ones.
head -c 131072 $D/perf >small.in
feed() {
	while :; do cat $D/perf || return; done
}
cp /usr/bin/xz /tmp/xz-suid
chmod 4755 /tmp/xz-suid

/usr/bin/python3.11 -S -c "
import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
while True:
    fib(17)
    d = {}
    for i in range(20000):
        d[str(i)] = sorted(str(i * 7919))
    for i in range(20000):
        time.monotonic()
" &
py=$!
/usr/bin/sqlite3 :memory: \
	"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
	 SELECT count(*), sum(length(printf('%08x', x * 2654435761))) FROM c;" >/dev/null &
sq=$!
feed | /usr/bin/xz -6 -T1 -c >/dev/null &
xz=$!
# uid 65534 runs it (busybox su as root asks no password, and execs).
mkdir -p /etc
grep -q '^nobody:' /etc/passwd 2>/dev/null || echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >>/etc/passwd
grep -q '^nogroup:' /etc/group 2>/dev/null || echo 'nogroup:x:65534:' >>/etc/group
feed | su -s /bin/sh nobody -c 'exec /tmp/xz-suid -6 -T1 -c' 2>suid.err >/dev/null &
suid=$!
# Two loops, so that the short-lived processes get samples enough.
short_loop() {
	n=0
	while [ ! -e /tmp/stop ]; do
		/usr/bin/xz -3 -T1 -c small.in >/dev/null
		n=$((n + 1))
		echo $n >/tmp/loops.$1
	done
}
short_loop 1 &
loop=$!
short_loop 2 &
loop2=$!
echo "### system-pids python3=$py sqlite3=$sq xz=$xz xz-suid=$suid"
sleep 3
grep -c . /proc/$suid/maps >/dev/null 2>&1 || echo "# the setuid xz did not start: $(head -3 suid.err)"
echo "# xz-suid: $(grep -E '^(Uid|Gid):' /proc/$suid/status | tr -s '\t\n' '  ')"

loops() {
	echo $(($(cat /tmp/loops.1 2>/dev/null || echo 0) + $(cat /tmp/loops.2 2>/dev/null || echo 0)))
}

# phase NAME COMMAND...: runs COMMAND for the phase, prints its line.
phase() {
	name=$1
	shift
	l0=$(loops)
	t0=$(date +%s)
	"$@" >$name.out 2>$name.err
	rc=$?
	t1=$(date +%s)
	kb=0
	[ -f $name.data ] && kb=$(($(wc -c <$name.data) / 1024))
	echo "### system-phase $name rc=$rc seconds=$((t1 - t0)) loops=$(($(loops) - l0)) data_kb=$kb"
	sed "s/^/# $name: /" $name.out $name.err | head -10 | tr -d '\000-\010\016-\037\177-\377'
}

# dwarf PHASE: one system-wide recording with both unwinds, and its
# blocks. cpu-clock: no hardware PMU under TCG; user samples only.
dwarf() {
	phase $1 perf record -a -e cpu-clock:u -F $SYSTEM_FREQ --call-graph dwarf,8192 \
		--user-callchains -N --proc-map-timeout 30000 -o $1.data -- sleep $SYSTEM_SECONDS
	perf script --ns --no-inline -i $1.data -F comm,tid,time,ip,sym,symoff,dso \
		>$1.txt 2>$1.script-err
	perf report -D -i $1.data 2>$1.report-err |
		grep -E 'PERF_RECORD_SAMPLE|^\.\.\.\.\. +[0-9]+: ' >$1.raw
	guest_block system-script $1 $1.txt
	guest_block system-raw $1 $1.raw
	rm -f $1.data $1.txt $1.raw
}

phase idle sleep $SYSTEM_SECONDS
[ "$SYSTEM_BEFORE" = 1 ] && dwarf before

t0=$(date +%s)
sframe-synth attach --running >agent.out 2>agent.err
rc=$?
t1=$(date +%s)
echo "### system-agent rc=$rc seconds=$((t1 - t0)) attached=$(grep -c '^attached ' agent.out) skipped=$(grep -c '^skipped ' agent.out) failed=$(grep -c '^failed ' agent.out)"
sed 's/^/# agent: /' agent.out agent.err | head -40

dwarf after

phase fp perf record -a -e cpu-clock:u -F $SYSTEM_FREQ --call-graph fp,defer -N \
	--proc-map-timeout 30000 -o fp.data -- sleep $SYSTEM_SECONDS
perf script --ns --no-inline -i fp.data -F comm,tid,time,ip,sym,symoff,dso >fp.txt 2>fp.script-err
guest_block system-script fp fp.txt
rm -f fp.data fp.txt

touch /tmp/stop
kill $py $sq $xz $suid 2>/dev/null
wait $loop $loop2

# What a table attached to every object costs a program's start (mmap
# attaches them), on a machine left idle: curl (33 objects) started N
# times with none of its objects attached, then with all of them; three
# rounds.
N=$SYSTEM_STARTUP_RUNS
now_cs() {
	read -r up _ </proc/uptime
	echo "${up%.*}${up#*.}"
}
start_ms() {
	t0=$(now_cs)
	i=0
	while [ $i -lt $N ]; do
		/usr/bin/curl --version >/dev/null 2>&1 || return 1
		i=$((i + 1))
	done
	echo $((($(now_cs) - t0) * 10))
}
if [ "$SYSTEM_STARTUP" != 1 ]; then
	echo "### system-end"
	exit 0
fi
# The agent's tables go first: "none" is none.
sed -n 's/^attached \([^ ]*\) .*/\1/p' agent.out | xargs sframe-synth detach | tail -1 | sed 's/^/# /'
# (The guest has no ldd: the host listed them.)
curl_objs=$(cat $D/curl-objects)
for round in 1 2 3; do
	plain=$(start_ms)
	sframe-synth attach /usr/bin/curl $curl_objs >curl-attach.out 2>&1
	arc=$?
	attached=$(start_ms)
	sframe-synth detach /usr/bin/curl $curl_objs >/dev/null 2>&1
	echo "### system-startup round=$round runs=$N plain_ms=${plain:-failed} attached_ms=${attached:-failed} attach_rc=$arc $(tail -1 curl-attach.out)"
done
echo "### system-end"
