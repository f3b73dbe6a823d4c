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
#   late    the provider of file tables (sframe-synth serve) up, then
#           programs started that map files nothing mapped before, the
#           same recording as "after"; the provider killed and restarted
#           in the middle
#
# For each recording it prints perf script's output and the raw callchains
# of perf report -D (how many frames are the kernel's), gzip + base64
# (guest_block), between markers for demo/system.py:
#
#   ### system-pids NAME=PID...
#   ### system-phase PHASE rc=R seconds=S loops=N data_kb=K
#   ### system-agent rc=R seconds=S attached=N skipped=N failed=N
#   ### system-late-pids NAME=PID...
#   ### system-serve name=NAME rss_kb=K cpu_ticks=T hz=100
#   ### system-build (SYSTEM_BUILD=1: the build ran)
#   ### system-memory files_in_use=N file_tables=N file_bytes=B ...
#   ### system-startup round=R runs=N plain_ms=M attached_ms=M ...
#   ### system-script PHASE begin ... end
#   ### system-raw PHASE begin ... end
# shellcheck source=harness/guest-lib.sh
. /selftests/guest-lib.sh
SYSTEM_FREQ=100
SYSTEM_SECONDS=8
# make check's run skips what only gives figures: the "before" recording,
# the fp,defer one and curl's start-up.
SYSTEM_BEFORE=1
SYSTEM_STARTUP=1
SYSTEM_STARTUP_RUNS=10
SYSTEM_FP=1
# The build of the late phase: figures only (cc1's table takes longer to
# make under TCG than make check's recording lasts).
SYSTEM_BUILD=0
[ -f $D/system.env ] && . $D/system.env
# The late programs start a second into it: time for their first files to
# be answered, and for samples after that; a build, 40 s more.
LATE_SECONDS=$((SYSTEM_SECONDS + 12 + SYSTEM_BUILD * 40))

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

if [ "$SYSTEM_FP" = 1 ]; then
	phase fp perf record -a -e cpu-clock:u -F $SYSTEM_FREQ --call-graph fp,defer -N \
		--proc-map-timeout 30000 -o fp.data -- sleep $SYSTEM_SECONDS
	perf script --ns --no-inline -i fp.data -F comm,tid,time,ip,sym,symoff,dso >fp.txt \
		2>fp.script-err
	guest_block system-script fp fp.txt
	rm -f fp.data fp.txt
fi

# The programs started first are judged: stopped, so that the late
# programs get the guest's two vCPUs.
touch /tmp/stop
kill $py $sq $xz $suid 2>/dev/null
wait $loop $loop2

# late: the machine's provider of file tables (sframe-synth serve) is up,
# and programs start after it that map files nothing mapped before, while
# the whole machine is recorded as in "after": short-lived bzip2 processes
# (libbz2), python3.11 importing extension modules after it started
# (_bz2 and libbz2, _lzma, _hashlib and libcrypto, _uuid and libuuid),
# zstd -19 (libzstd), a copy of xz that only its own mount namespace sees
# and a build (gcc -c again and again). The provider is killed and
# restarted in the middle.
serve_stats() {
	# peak RSS (kB) and CPU time (clock ticks) of the provider $1
	hwm=$(sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' /proc/$1/status 2>/dev/null)
	ticks=$(awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null)
	echo "### system-serve name=$2 rss_kb=${hwm:-0} cpu_ticks=${ticks:-0} hz=100"
}
late_loop() {
	while [ ! -e /tmp/stop-late ]; do
		/usr/bin/bzip2 -9 -c small.in >/dev/null
	done
}
# A build (SYSTEM_BUILD=1): gcc -O2 -c of a small file, again and again,
# each a driver, a cc1 (with libisl, libmpc, libmpfr, libgmp) and an as
# (libbfd, libopcodes, libsframe), all short-lived.
cat >build.c <<'EOT'
static unsigned int mix(unsigned int h, unsigned int v)
{
	return (h ^ v) * 16777619u;
}

unsigned int checksum(const unsigned char *p, unsigned long n)
{
	unsigned int h = 2166136261u;
	unsigned long i;

	for (i = 0; i < n; i++)
		h = mix(h, p[i] + (i & 7));
	return h;
}

void sort(int *a, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
			int t = a[j];

			a[j] = a[j - 1];
			a[j - 1] = t;
		}
}
EOT
build_loop() {
	while [ ! -e /tmp/stop-late ]; do
		/usr/bin/gcc -O2 -nostdinc -c -o build.o build.c 2>>build.err
	done
}
sframe-synth serve --cache /tmp/sframe-cache >serve1.out 2>serve1.err &
srv=$!
sleep 1
t0=$(date +%s)
# CLOCK_MONOTONIC: the provider's log says when it answered, by that clock.
perf record -a -e cpu-clock:u -F $SYSTEM_FREQ --call-graph dwarf,8192 --user-callchains -N \
	-k CLOCK_MONOTONIC --proc-map-timeout 30000 -o late.data -- sleep $LATE_SECONDS \
	>late.out 2>late.err &
rec=$!
sleep 1
late_loop &
bz=$!
gcc=
if [ "$SYSTEM_BUILD" = 1 ]; then
	build_loop &
	gcc=$!
	echo "### system-build"
fi
/usr/bin/python3.11 -S $D/pylate.py &
lpy=$!
feed | /usr/bin/zstd -19 -T1 -c >/dev/null &
zs=$!
# The same bytes at the same path here, another file: perf script, run
# after the namespace is gone, reads it for the DWARF unwind.
mkdir -p /tmp/ns
cp /usr/bin/xz /tmp/ns/xz-ns
feed | unshare -m sh -c 'mount -t tmpfs none /tmp/ns && cp /usr/bin/xz /tmp/ns/xz-ns &&
	exec /tmp/ns/xz-ns -6 -T1 -c >/dev/null' &
ns=$!
echo "### system-late-pids python3-late=$lpy zstd=$zs xz-ns=$ns"
sleep 3
serve_stats $srv serve1
kill -9 $srv
wait $srv 2>/dev/null
sframe-synth serve --cache /tmp/sframe-cache >serve2.out 2>serve2.err &
srv=$!
wait $rec
rc=$?
t1=$(date +%s)
echo "### system-phase late rc=$rc seconds=$((t1 - t0)) loops=0 data_kb=$(($(wc -c <late.data) / 1024))"
serve_stats $srv serve2
# The kernel memory of the tables against the files in use: distinct
# files (device and inode) mapped executable by a process now.
in_use=$(cat /proc/[0-9]*/maps 2>/dev/null |
	awk '$2 ~ /x/ && $5 != 0 && $6 ~ /^\// { print $4, $5 }' | sort -u | wc -l)
echo "### system-memory files_in_use=$in_use $(sframe-synth status)"
touch /tmp/stop-late
kill $lpy $zs $ns $srv 2>/dev/null
# shellcheck disable=SC2086
wait $bz $gcc
[ -f build.err ] && sed 's/^/# build: /' build.err | head -5
sed 's/^/# serve1: /' serve1.out serve1.err | head -60
sed 's/^/# serve2: /' serve2.out serve2.err | head -60
# Only the late programs' samples are unwound (the others' unwinding is
# most of the guest's time under TCG).
perf script --ns --no-inline -i late.data -F comm,tid,time,ip,sym,symoff,dso \
	--comms python3.11,zstd,xz-ns,bzip2,gcc,cc1,as >late.txt 2>late.script-err
perf report -D -i late.data 2>late.report-err |
	grep -E 'PERF_RECORD_SAMPLE|^\.\.\.\.\. +[0-9]+: ' >late.raw
guest_block system-script late late.txt
guest_block system-raw late late.raw
rm -f late.data late.txt late.raw

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
