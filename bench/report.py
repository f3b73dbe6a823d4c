#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host side of `make bench`: read the guest's results.log (bench/guest-bench.sh),
compute the figures and ratios, write OUTDIR/results.md, print it, and end
with the three summary lines:

    bench: sframe_fp_step_ratio warm=X cold=Y
    bench: dwarf_sframe_bytes_ratio=Z
    bench: lookup_ns fdes_1k=A fdes_10k=B fdes_100k=C

Usage: python3 -m bench.report --results LOG --out DIR --build DIR --accel FILE
                                 --noalloc FILE --kernel STRING [--seconds N] [--config FILE]
(from the top directory, or with it in PYTHONPATH).
Exit status 1 if the log lacks a figure or the guest reported an error;
a missed goal is reported, not an error.

In four steps: parse() reads the log (harness/guestlog.py), measure() makes
the figures of it, judge() gives each goal its verdict, render() writes the
table, one render_SECTION() a section; main() runs them.
"""
import argparse
import datetime
import math
import os
import platform
import re
import statistics
import struct
import subprocess
import sys
import types

from demo import perfscript
from harness import guestlog

PERF_LABELS = {
    'none': 'unprofiled (before)', 'none2': 'unprofiled (after)',
    'fp': '`--call-graph fp`, `unwind_user_nmi_sframe=0` (frame pointers alone)',
    'sframe': '`--call-graph fp,defer` (SFrame; deferred when not whole at once)',
    'nmisf': '`--call-graph fp` (SFrame at sample time)',
    'fpbfp': 'fp build, `--call-graph fp`, `unwind_user_nmi_sframe=0` (mainline\'s walk)',
    'fpb': 'fp build, `--call-graph fp`',
    'fpbdefer': 'fp build, `--call-graph fp,defer`',
    'dwarf': '`--call-graph dwarf`'}
# End-to-end modes of section b, in the order they run (guest-bench.sh).
PERF_MODES = ('none', 'fp', 'sframe', 'nmisf', 'fpbfp', 'fpb', 'fpbdefer', 'dwarf', 'none2')

DEBUG_OPTIONS = ['PROVE_LOCKING', 'PROVE_RCU', 'DEBUG_KMEMLEAK', 'DEBUG_ATOMIC_SLEEP',
                 'DEBUG_LIST', 'RUST_DEBUG_ASSERTIONS', 'RUST_OVERFLOW_CHECKS', 'KASAN']


def num(v):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


PROFILE_ROW = re.compile(r'\s*([\d.]+)%\s+(\d+)\s+\[([k.])\]\s+(.+?)\s*$')


def parse(path):
    """The log as a list of (key, {k: v}, binary), the perf script texts,
    the notes and the kernel profiles ({unwinder: [(percent, samples,
    symbol)]})."""
    log = guestlog.read(path)
    recs, notes = [], []
    binary = 'unwind_bench'
    for line in log.lines:
        if line.startswith('# '):
            notes.append(line)
            continue
        m = re.match(r'bench: (\w+)(.*)', line)
        if not m:
            continue
        key = m.group(1)
        kv = {k: num(v) for k, v in guestlog.fields(m.group(2)).items()}
        if key == 'binary':
            binary = kv['name']
            continue
        if key == 'error':
            kv['text'] = m.group(2).strip()
        recs.append((key, kv, binary))
    profiles = {}
    for u in log.names('bench-profile'):
        profiles[u] = [(float(m.group(1)), int(m.group(2)), m.group(4))
                       for m in map(PROFILE_ROW.match, log.blocks['bench-profile', u]) if m]
    return recs, log.texts('bench-script', 'bench'), notes, profiles


def select(recs, rkey, binary=None, **match):
    return [kv for k, kv, b in recs
            if k == rkey and (binary is None or b == binary)
            and all(kv.get(a) == v for a, v in match.items())]


def symbolizer(path):
    """ip -> function name, from the host's unstripped binary."""
    try:
        out = subprocess.run(['nm', '-n', '--defined-only', path], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return lambda ip: hex(ip)
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'tTwW':
            syms.append((int(f[0], 16), f[2]))

    def name(ip):
        best = None
        for a, s in syms:
            if a > ip - 1:
                break
            best = s
        return best or hex(ip)
    return name


def simplify(name):
    """sframe[hash]::section::Section<R>>::walk::<...> -> sframe::section::Section::walk"""
    name = re.sub(r'\[[0-9a-f]+\]', '', name)
    while True:
        new = re.sub(r'(\w)<[^<>]*>', r'\1', name)
        new = re.sub(r'<([\w:]+)>::', r'\1::', new)
        new = re.sub(r'::<[^<>]*>', '', new)
        if new == name:
            break
        name = new
    return re.sub(r'::\{closure#\d+\}', '', name)


def demangle(names):
    """Rust v0 symbols made readable by c++filt (binutils); others as given."""
    try:
        out = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True,
                             text=True, check=True).stdout.splitlines()
        if len(out) == len(names):
            return [simplify(o) for o in out]
    except (OSError, subprocess.CalledProcessError):
        pass
    return list(names)


# Where the time of an unwind goes, by the symbols perf sampled.
CATEGORIES = [
    ('lockdep and debug checks', re.compile(
        r'lock_acquire|lock_release|lockdep|mark_lock|^check_|validate_chain|hlock|'
        r'__might_|debug_lockdep|_held|match_held_lock|find_held|__bfs|mark_usage|'
        r'lock_is_held|kmemleak|debug_')),
    ('user memory access', re.compile(
        r'copy_user|copy_from_user|__get_user|get_user|rep_movs|memcpy|clear_user|'
        r'UserSlice|uaccess|fault')),
    ('SFrame decoder (rust/sframe)', re.compile(r'6sframe|^sframe::')),
    ('SFrame registry and step (kernel/unwind_user)', re.compile(
        r'11unwind_user|^unwind_user::|^unwind_user_sframe_')),
    ('RCU', re.compile(r'rcu')),
    ('Rust helpers (C calls for atomics, current)', re.compile(r'rust_helper')),
    ('generic unwind (kernel/unwind/user.c)', re.compile(r'^unwind_user')),
]


def categorize(sym):
    for name, rx in CATEGORIES:
        if rx.search(sym) or rx.search(simplify(sym)):
            return name
    return 'other (syscall, timer, perf, user space)'


def fmt(v, d=2):
    if v is None:
        return 'n/a'
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return 'n/a'
    return f'{v:.{d}f}'


def verdict(ok):
    return 'MET' if ok else 'MISSED'


class Records:
    """parse()'s records and the lookups measure() makes of them; what is
    missing, and what the guest reported as an error or a warning, goes
    to .problems."""

    def __init__(self, recs):
        self.recs = recs
        self.problems = [f"guest error: {kv.get('text', '')}" for kv in select(recs, 'error')]
        self.problems += [f"guest warning: {kv}" for kv in select(recs, 'warning')]
        # The median of each warm measurement's rounds, per frame.
        self.med = {}

    def one(self, key, binary=None, **match):
        """The last record that matches (a problem if none does)."""
        r = select(self.recs, key, binary, **match)
        if not r:
            self.problems.append(f'missing: {key} {binary or ""} {match}')
            return {}
        return r[-1]

    def warm(self, binary, key, depth, unwinder):
        """A warm step: (ns per frame, ns per unwind, frames), per frame and
        per unwind the fastest of the interleaved rounds: the host is
        shared, and what it does meanwhile only ever adds time (bursts of
        several times the cost were seen); the median is kept for
        comparison (med_ratio())."""
        r = select(self.recs, key, binary, depth=depth, unwinder=unwinder)
        if not r:
            self.problems.append(f'missing: {key} {binary} depth={depth} {unwinder}')
            return None, None, None
        per_frame = [x['ns'] / (x['iters'] * x['frames']) for x in r]
        per_unwind = [x['ns'] / x['iters'] for x in r]
        self.med[binary, key, depth, unwinder] = statistics.median(per_frame)
        return min(per_frame), min(per_unwind), r[0]['frames']

    def med_ratio(self, binary, key, depth):
        """SFrame over frame pointers, of the medians of warm()."""
        s, f = self.med.get((binary, key, depth, 'sframe')), self.med.get((binary, key, depth, 'fp'))
        return s / f if s and f else None


def measure(recs, texts, profiles, build, noalloc_last):
    """The figures of the log (parse()'s records, perf script texts and
    kernel profiles), the unstripped programs in @build, and the last line
    of noalloc.py's report; missing figures and the guest's errors are
    listed in .problems. One measure_SECTION() a section, in the order
    the problems are listed."""
    rec = Records(recs)
    guest = rec.one('guest')
    cfg = rec.one('config')
    fig = types.SimpleNamespace(
        problems=rec.problems, med_ratio=rec.med_ratio, guest=guest, cfg=cfg,
        shallow=cfg.get('shallow', 4), deep=cfg.get('deep', 200),
        gdepth=cfg.get('growth_depth', 100), noalloc_last=noalloc_last, profiles=profiles,
        execs=select(recs, 'exec'), build=build)
    measure_step(rec, fig, build)
    measure_growth(rec, fig)
    measure_registration(rec, fig)
    measure_perf(rec, fig, texts)
    measure_breakdown(rec, fig, profiles)
    fig.warm_x = fig.ratio.get(('warm', fig.deep))
    fig.shallow_x = fig.ratio.get(('warm', fig.shallow))
    fig.cold_med = fig.ratio.get(('cold_median', fig.deep))
    fig.cold_file_shallow = fig.ratio.get(('cold_file', fig.shallow))
    fig.miss_x = fig.ratio.get('uncovered')
    return fig


def measure_step(rec, fig, build):
    """a. The step, warm and cold, SFrame against frame pointers; the stack as returned."""
    shallow, deep = fig.shallow, fig.deep
    W = {}
    for key in ('step', 'uncovered'):
        for d in (shallow, deep):
            for u in ('sframe', 'fp'):
                if key == 'uncovered' and d != deep:
                    continue
                W[key, d, u] = rec.warm('unwind_bench', key, d, u)
    ratio = {}
    for d in (shallow, deep):
        s, f = W['step', d, 'sframe'][0], W['step', d, 'fp'][0]
        ratio['warm', d] = s / f if s and f else None
    # Marginal cost of one more frame: the slope between the two depths
    # (takes out what every unwind pays once: the start, libc's frames).
    marg = {}
    for u in ('sframe', 'fp'):
        (_, us, fs), (_, ud, fd) = W['step', shallow, u], W['step', deep, u]
        marg[u] = (ud - us) / (fd - fs) if None not in (us, ud, fs, fd) and fd != fs else None
    ratio['marginal'] = marg['sframe'] / marg['fp'] if marg['sframe'] and marg['fp'] else None
    us_, uf = W['uncovered', deep, 'sframe'][0], W['uncovered', deep, 'fp'][0]
    ratio['uncovered'] = us_ / uf if us_ and uf else None

    # Cold: after a re-registration (rows read from user memory), and with
    # the section attached to the file (rows in kernel memory).
    C, cold_check = {}, {}
    for key in ('cold', 'cold_file'):
        for d in (shallow, deep):
            for u in ('sframe', 'fp'):
                C[key, d, u] = rec.one(key, depth=d, unwinder=u)
            s, f = C[key, d, 'sframe'], C[key, d, 'fp']
            if s and f:
                ratio[key, d] = (s['mean_ns'] / s['frames']) / (f['mean_ns'] / f['frames'])
                ratio[key + '_median', d] = ((s['median_ns'] / s['frames'])
                                             / (f['median_ns'] / f['frames']))
        cold_check[key] = {kv['depth']: kv for kv in select(rec.recs, key + '_check')}
    ips = {(kv['key'], kv['depth']): kv for kv in select(rec.recs, 'ips', 'unwind_bench')}
    stepcounts = {}
    for d in (shallow, deep):
        r = select(rec.recs, 'step', 'unwind_bench', depth=d, unwinder='sframe')
        if r:
            stepcounts[d] = (r[0]['sframe_frames'] / r[0]['iters'],
                             r[0]['fp_fallbacks'] / r[0]['iters'], r[0]['errors'])
    sym = symbolizer(os.path.join(build, 'unwind_bench'))
    stack = select(rec.recs, 'stack', 'unwind_bench', key='step', depth=shallow, unwinder='sframe')
    shallow_stack = ' < '.join(sym(int(x, 16)) for x in str(stack[0]['ips']).split(',')) \
        if stack else 'n/a'
    vars(fig).update(W=W, ratio=ratio, marg=marg, C=C, ips=ips, cold_check=cold_check,
                     stepcounts=stepcounts, shallow_stack=shallow_stack)


def measure_growth(rec, fig):
    """d. Growth: the warm step against the number of functions, its fit to log2."""
    gdepth = fig.gdepth
    # ---- d. growth.
    G = []
    sizes = []
    for k, kv, b in rec.recs:
        if k == 'info' and b.startswith('growth_'):
            sizes.append((int(b.split('_')[1]), b, kv))
    for n, b, info in sizes:
        s = rec.warm(b, 'step', gdepth, 'sframe')
        f = rec.warm(b, 'step', gdepth, 'fp')
        m = select(rec.recs, 'ips', b, depth=gdepth)
        G.append(dict(n=n, binary=b, fdes=info.get('fdes'), sframe_bytes=info.get('sframe_bytes'),
                      sf=s[0], fp=f[0], frames=s[2], sf_med=rec.med.get((b, 'step', gdepth, 'sframe')),
                      fp_med=rec.med.get((b, 'step', gdepth, 'fp')),
                      match=m[0]['match'] if m else None))
    byn = {g['n']: g for g in G}
    fit = None
    pts = [(math.log2(g['fdes']), g['sf']) for g in G if g['fdes'] and g['sf']]
    if len(pts) >= 2:
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        sxx = sum((x - mx) ** 2 for x, _ in pts)
        slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
        icpt = my - slope * mx
        ss_tot = sum((y - my) ** 2 for _, y in pts)
        ss_res = sum((y - (icpt + slope * x)) ** 2 for x, y in pts)
        fit = dict(slope=slope, icpt=icpt, r2=1 - ss_res / ss_tot if ss_tot else 1.0)

    def sfn(n):
        return byn.get(n, {}).get('sf')
    per10 = []
    for lo, hi in ((1000, 10000), (10000, 100000)):
        if sfn(lo) and sfn(hi):
            per10.append((lo, hi, sfn(hi) / sfn(lo), sfn(hi) - sfn(lo)))
    vars(fig).update(G=G, byn=byn, fit=fit, sfn=sfn, per10=per10)


def measure_registration(rec, fig):
    """c. Registration: time, and kernel memory per section; the leak run."""
    cfg = fig.cfg
    # ---- c. registration.
    R = sorted(select(rec.recs, 'reg'), key=lambda kv: kv['fdes'])
    M = select(rec.recs, 'mem')
    for kv in M:
        kv['per_reg'] = kv['d_sunreclaim_kb'] * 1024 / kv['k']
        kv['per_reg_memfree'] = kv['d_memfree_kb'] * 1024 / kv['k']
    mem_k = cfg.get('mem_k', 50)
    # One figure per size (100k functions are registered fewer times: a
    # process may hold 16 MiB of FDE tables).
    m20 = {kv['fdes']: kv for kv in M if kv['k'] != 1000}
    k1000 = sorted((kv for kv in M if kv['k'] == 1000 and kv['fdes'] == 1),
                   key=lambda kv: kv['per_reg'])
    m1000 = {1: k1000[len(k1000) // 2]} if k1000 else {}
    leak = rec.one('leak')
    vars(fig).update(R=R, M=M, mem_k=mem_k, m20=m20, k1000=k1000, m1000=m1000, leak=leak)


def measure_perf(rec, fig, texts):
    """b. End to end with perf: rates, samples, completeness, time lost per sample."""
    # ---- b. perf end to end.
    # Each mode ran in PERF_ROUNDS rounds (older logs: one, without round=);
    # the first round's perf script output gives the stacks, the others'
    # sample counts come from perf_samples lines.
    runs = {}
    for kv in select(rec.recs, 'perf'):
        if 'mode' in kv and 'images' in kv:
            runs.setdefault(kv['mode'], []).append(kv)
    counts = {(kv['mode'], kv['round']): kv['samples'] for kv in select(rec.recs, 'perf_samples')}
    PS = {kv['mode']: kv for kv in select(rec.recs, 'perf_script')}
    E = {}
    for mode in PERF_MODES:
        rs = runs.get(mode)
        if not rs:
            if mode not in ('none2', 'fpbfp', 'fpb', 'fpbdefer'):
                rec.problems.append(f'missing: perf run {mode}')
            continue
        images = sum(kv['images'] for kv in rs)
        seconds = sum(kv['seconds'] for kv in rs)
        E[mode] = dict(rs[0], rate=images / seconds, images=images, seconds=seconds,
                       rounds=rs)
        if mode in texts:
            lost = []
            samples = perfscript.parse(texts[mode], lost)
            st = perfscript.stats(samples)
            n = st['samples']
            miss = {}
            for smp in samples:
                if not perfscript.reaches_main(smp):
                    dso = os.path.basename(smp[1][0][1]) if smp[1] else '(no stack)'
                    miss[dso] = miss.get(dso, 0) + 1
            first = rs[0]
            for kv in rs:
                kv['samples'] = n if kv is first else counts.get((mode, kv.get('round')))
            E[mode].update(samples=n, lost=sum(lost), miss=miss,
                           bps=first['bytes'] / n if n else None,
                           main=100 * st['reach_main'] / n if n else 0,
                           exact=100 * st['exact'] / st['workload_leaf'] if st['workload_leaf'] else 0,
                           hot=100 * st['hot_chain'] / n if n else 0,
                           depth=st['depth_sum'] / n if n else 0,
                           rate_hz=n / first['seconds'] if first['seconds'] else 0)
        elif not mode.startswith('none'):
            rec.problems.append(f'missing: perf script output {mode}')
    base = [kv['images'] / kv['seconds'] for m in ('none', 'none2') for kv in runs.get(m, [])]
    base_rate = sum(base) / len(base) if base else None
    for m in E:
        E[m]['slowdown'] = base_rate / E[m]['rate'] if base_rate and E[m]['rate'] else None
        # Time the workload lost per sample: its run time minus the time the
        # same images take unprofiled, over the samples taken, pooled over
        # the rounds. Unlike the slowdown, this does not depend on how many
        # samples a run got.
        rs = [kv for kv in E[m]['rounds'] if kv.get('samples')]
        if base_rate and rs:
            lost_s = [kv['seconds'] - kv['images'] / base_rate for kv in rs]
            E[m]['us_per_sample'] = sum(lost_s) / sum(kv['samples'] for kv in rs) * 1e6
            E[m]['us_rounds'] = [t / kv['samples'] * 1e6 for t, kv in zip(lost_s, rs)]
    bytes_ratio = None
    if E.get('sframe', {}).get('bps') and E.get('dwarf', {}).get('bps'):
        bytes_ratio = E['dwarf']['bps'] / E['sframe']['bps']

    # Time lost per sample against frame pointers alone (section b).
    us = {m: E.get(m, {}).get('us_per_sample') for m in ('fp', 'sframe', 'nmisf', 'dwarf')}
    us_x = {m: us[m] / us['fp'] if us[m] and us['fp'] and us['fp'] > 0 else None
            for m in ('sframe', 'nmisf')}
    vars(fig).update(E=E, PS=PS, bytes_ratio=bytes_ratio, us=us, us_x=us_x)


def measure_breakdown(rec, fig, profiles):
    """Where the deep loop's time per frame goes, by the kernel profile's categories."""
    # ---- the breakdown: the deep loop's time per frame, shared out by the
    # categories of the kernel profile's symbols.
    loops = {kv['unwinder']: kv for kv in select(rec.recs, 'loop')}
    per_frame, cats, rest, top = {}, {}, None, []
    if profiles:
        for u in ('sframe', 'fp'):
            kv = loops.get(u)
            per_frame[u] = kv['ns'] / (kv['iters'] * kv['frames']) if kv else None
        for u, rows in profiles.items():
            for pct, _, sym_ in rows:
                c = categorize(sym_)
                cats.setdefault(c, {}).setdefault(u, 0.0)
                cats[c][u] += pct
        dbg = 'lockdep and debug checks'
        if dbg in cats and per_frame.get('sframe') and per_frame.get('fp'):
            rest = {u: per_frame[u] * (1 - cats[dbg].get(u, 0.0) / 100) for u in ('sframe', 'fp')}
        rows = profiles.get('sframe', [])[:15]
        top = list(zip([pct for pct, _, _ in rows], demangle([t[2] for t in rows])))
    vars(fig).update(per_frame=per_frame, cats=cats, rest=rest, top=top)


def judge(fig):
    """The verdict of each goal (issue 12's targets, production kernel,
    ratios within this run) on the figures @fig: {goal: true if met}."""
    ok = {
        'warm': (fig.warm_x is not None and fig.shallow_x is not None
                 and max(fig.warm_x, fig.shallow_x) <= 1.5),
        'cold': fig.cold_med is not None and fig.cold_med <= 3,
        'cold_file': fig.cold_file_shallow is not None and fig.cold_file_shallow <= 2,
        'miss': fig.miss_x is not None and fig.miss_x <= 1.2,
        'flat': bool(fig.G) and fig.G[-1]['sf'] <= 1.2 * fig.G[0]['sf'],
    }
    # End to end: the time lost per sample at most 1.2x frame pointers
    # alone's, and below dwarf's.
    for m in ('sframe', 'nmisf'):
        r = fig.us_x[m]
        ok[m] = (r is not None and r <= 1.2 and fig.us['dwarf'] is not None
                 and fig.us[m] < fig.us['dwarf'])
    E = fig.E
    complete_ok = ('main' in E.get('sframe', {}) and 'main' in E.get('dwarf', {})
                   and E['sframe']['main'] >= E['dwarf']['main']
                   and E['sframe']['exact'] >= E['dwarf']['exact'])
    ok['perf'] = bool(fig.bytes_ratio and fig.bytes_ratio >= 20 and complete_ok)
    # What registration keeps is the FDE table (20 bytes a function,
    # kvmalloc'ed) and a fixed part: at most 22 bytes a function (page
    # rounding) plus 8 KiB.
    ok['mem'] = None
    if 1 in fig.m20 and 100000 in fig.m20:
        ok['mem'] = all(fig.m20[n]['per_reg'] <= 22 * n + 8192 for n in (1, 100000))
    # Unreclaimable kernel memory must not grow over the unwinds (it may
    # shrink: RCU frees the tables of earlier phases meanwhile).
    ok['alloc'] = fig.noalloc_last.startswith('noalloc: ok') and fig.leak and \
        fig.leak.get('d_sunreclaim_kb', 99) <= 8
    # At most logarithmic: a binary search does log2(10) = 3.3 more probes
    # per 10x, so each 10x adds about the same; a linear search would
    # multiply the cost by ~10 per 10x. Verdict: every 10x multiplies the
    # per-frame cost by less than 2. (The search in kernel memory and the
    # rule cache make the growth nearly flat, where the log2 fit's R^2 says
    # nothing: shown, not judged.)
    ok['log'] = len(fig.per10) == 2 and all(r < 2 for _, _, r, _ in fig.per10)
    return ok


def environment(a):
    """What the table says of the run besides the figures: date, kernel,
    its configuration, the host, the emulation, the run time."""
    accel = open(a.accel).read().strip() if os.path.exists(a.accel) else '?'
    cpu = '?'
    try:
        with open('/proc/cpuinfo') as f:
            cpu = next(line.split(':', 1)[1].strip() for line in f if line.startswith('model name'))
    except (OSError, StopIteration):
        pass
    debug, opt = [], 'not checked'
    if a.config and os.path.exists(a.config):
        conf = open(a.config).read()
        debug = [o for o in DEBUG_OPTIONS if f'CONFIG_{o}=y' in conf]
        opt = ('size (CC_OPTIMIZE_FOR_SIZE: -Os, Rust opt-level s)'
               if 'CONFIG_CC_OPTIMIZE_FOR_SIZE=y' in conf else
               'speed (CC_OPTIMIZE_FOR_PERFORMANCE: -O2, Rust opt-level 2)')
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    return dict(date=now, kernel=a.kernel, seconds=a.seconds, config=a.config, accel=accel,
                cpu=cpu, debug=debug, opt=opt)


def render_header(fig, ok, env, o):
    """The table's head: the run, the kernel, the machine, the emulation."""
    accel = env['accel']
    guest = fig.guest
    o('# `make bench` results')
    o('')
    o('| | |')
    o('|---|---|')
    o(f'| date | {env["date"]} |')
    o(f'| kernel | {env["kernel"]} (guest `uname -r`: {guest.get("kernel", "?")}) |')
    o(f'| debug options on | {", ".join(env["debug"]) if env["debug"] else "none found" if env["config"] else "not checked"} |')
    o(f'| optimized for | {env["opt"]} |')
    o(f'| machine | host: {os.cpu_count()} CPUs, {env["cpu"]}, {platform.system()} {platform.release()}; '
      f'guest: {guest.get("nproc", "?")} vCPUs, {str(guest.get("cpu", "?")).replace("_", " ")}, 2 GiB |')
    o(f'| emulation | **{accel}** (from run-guest.sh) |')
    o(f'| run time | {env["seconds"]} s (build, boot, measurements) |')
    o('')
    if accel == 'tcg-icount':
        o('**The guest ran under TCG with `-icount`: its clock counts the instructions the '
          'guest executes on either vCPU (`make bench BENCH_ICOUNT=0`: one a ns), so every '
          '"ns" and "us" below is a count of instructions, the same from run to run whatever '
          'the host\'s load. An instruction is not a cycle: a user copy\'s STAC/CLAC or a '
          'cache miss costs one here, many on hardware.**')
        o('')
    elif accel != 'kvm':
        o('**Under TCG every absolute time is inflated (software emulation, no cache model): '
          'read the ratios, which compare unwinders within this one run, not the ns.**')
        o('')


def render_step(fig, ok, env, o):
    """a. The unwind step, warm and cold, SFrame against frame pointers."""
    C, W, cfg, cold_check, deep = fig.C, fig.W, fig.cfg, fig.cold_check, fig.deep
    ips, marg, med_ratio, ratio, shallow = fig.ips, fig.marg, fig.med_ratio, fig.ratio, fig.shallow
    shallow_stack, stepcounts = fig.shallow_stack, fig.stepcounts
    o('## a. Unwind step per frame, SFrame against frame pointers (same stacks)')
    o('')
    o('`unwind_bench`: static, `-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer '
      '-Wa,--gsframe`; the stack is a ring of 10 functions under the `write()` to the debugfs '
      'trigger. Warm: the fastest of '
      f'{cfg.get("rounds", "?")} interleaved measurements of {cfg.get("iters_shallow", "?")} '
      f'(shallow) / {cfg.get("iters_deep", "?")} (deep) unwinds (the host is shared and '
      'interference only adds time; the ratio of the medians is shown in parentheses). Cold: the first unwind after '
      'unregistering and re-registering the section with prctl, 1 unwind, mean (median) of '
      f'{cfg.get("cold_reps", "?")}; the fp runs get the same re-registration before them.')
    o('')
    o('| stack | frames | sframe ns/frame | fp ns/frame | sframe/fp | ips equal |')
    o('|---|---:|---:|---:|---:|---|')
    for d, name in ((shallow, 'shallow'), (deep, 'deep')):
        s, f = W['step', d, 'sframe'], W['step', d, 'fp']
        ip = ips.get(('step', d), {})
        o(f'| warm, {name} | {s[2]} | {fmt(s[0], 0)} | {fmt(f[0], 0)} | '
          f'**{fmt(ratio.get(("warm", d)))}** ({fmt(med_ratio("unwind_bench", "step", d))}) | '
          f'{"yes" if ip.get("match") == 1 else "NO"} |')
    for key, what in (('cold', 'cold'), ('cold_file', 'cold, file table')):
        for d, name in ((shallow, 'shallow'), (deep, 'deep')):
            s, f = C.get((key, d, 'sframe')), C.get((key, d, 'fp'))
            if s and f:
                cc = cold_check[key].get(d, {})
                o(f'| {what}, {name} | {s["frames"]} | {fmt(s["mean_ns"] / s["frames"], 0)} '
                  f'({fmt(s["median_ns"] / s["frames"], 0)}) | {fmt(f["mean_ns"] / f["frames"], 0)} '
                  f'({fmt(f["median_ns"] / f["frames"], 0)}) | **{fmt(ratio.get((key, d)))}** '
                  f'({fmt(ratio.get((key + "_median", d)))}) | '
                  f'{"yes" if cc.get("match") == 1 and cc.get("changed") == 0 else "NO"} |')
    o(f'| warm, marginal frame (slope {shallow}->{deep} chain frames) | | {fmt(marg["sframe"], 0)} | '
      f'{fmt(marg["fp"], 0)} | {fmt(ratio["marginal"])} | |')
    s, f = W['uncovered', deep, 'sframe'], W['uncovered', deep, 'fp']
    o(f'| warm, deep, section registered for other text only (SFrame finds no section: its miss path, then fp) | '
      f'{s[2]} | {fmt(s[0], 0)} | {fmt(f[0], 0)} | {fmt(ratio["uncovered"])} '
      f'({fmt(med_ratio("unwind_bench", "uncovered", deep))}) | '
      f'{"yes" if ips.get(("uncovered", deep), {}).get("match") == 1 else "NO"} |')
    o('')
    for d in (shallow, deep):
        if d in stepcounts:
            sf, fb, err = stepcounts[d]
            o(f'- {d} chain frames: per SFrame unwind, {sf:.0f} frames from SFrame, {fb:.0f} '
              f'left to the frame-pointer rule (libc\'s start code has neither SFrame nor a '
              f'frame-pointer-built caller), {err} errors (`UNWIND_USER_QUERY` counters).')
    o(f'- shallow stack, as both unwinders return it: `{shallow_stack}`.')
    if deep in cold_check['cold']:
        o(f'- cold: each re-registration (unregister + register this program\'s '
          f'section) took {fmt(cold_check["cold"][deep].get("reregister_us"), 0)} us on average.')
    if deep in cold_check['cold_file']:
        o('- cold, file table: the program\'s section attached to its file '
          '(`UNWIND_USER_FILE_ATTACH`, rows in kernel memory) instead of registered; the rule '
          'cache emptied before each unwind by re-registering a section for another text '
          f'({fmt(cold_check["cold_file"][deep].get("reregister_us"), 0)} us). The table\'s '
          'cache of answers, shared by every address space mapping the file, holds what the '
          'walks before found: the first walk of a process whose libraries other processes\' '
          'walks went through.')
    o('')


def render_perf(fig, ok, env, o):
    """b. End to end with perf."""
    E, PS, bytes_ratio, cfg = fig.E, fig.PS, fig.bytes_ratio, fig.cfg
    o('## b. End to end: perf record -F %s on the demo workload' % cfg.get('perf_freq', '?'))
    o('')
    o(f'`demo/imgdemo {cfg.get("perf_seconds", "?")}` (built without frame pointers, SFrame V1, '
      'one shared library registering its own section), `perf record -e cpu-clock:u` in the guest. '
      'Slowdown: images per second unprofiled (mean of every unprofiled run) over images '
      'per second profiled; it depends on how many samples the run got (the guest reaches '
      'nothing near the requested rate under TCG), the time lost per sample much less: (run time - '
      'images / unprofiled rate) / samples. DWARF unwinds later, in `perf script` (its time, '
      'whole seconds, is shown). Completeness from `perf script` (demo/perfscript.py): *reach main* = '
      'samples whose stack contains main; *exact* = of the samples whose leaf is a workload '
      'function, those with every caller right up to main.')
    o('')
    o(f'Each mode ran {len(E.get("fp", {}).get("rounds", [])) or "?"} times, in rounds over all '
      'modes; images/s, slowdown and time lost per sample pool the rounds (each round\'s time '
      'lost per sample in parentheses), the rest is from the first round. *fp build*: the same '
      'program and library built with frame pointers and without SFrame (`make -C demo '
      'FRAME=fp`): `fp,defer` against `fp` there is what deferral itself costs, whatever the '
      'unwinder.')
    o('')
    o('| run | images/s | slowdown | samples | samples/s | time lost per sample | perf script | lost samples | perf.data bytes | bytes/sample | reach main | exact | mean depth |')
    o('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for m in PERF_MODES:
        e = E.get(m)
        if not e:
            continue
        if 'samples' in e:
            per = ', '.join(fmt(u, 1) for u in e.get('us_rounds', []))
            o(f'| {PERF_LABELS[m]} | {fmt(e["rate"], 1)} | {fmt(e["slowdown"])}x | {e["samples"]} | '
              f'{fmt(e["rate_hz"], 0)} | {fmt(e.get("us_per_sample"), 1)} us ({per}) | '
              f'{PS.get(m, {}).get("script_s", "?")} s | {e["lost"]} | '
              f'{e["bytes"]} | {fmt(e["bps"], 0)} | '
              f'{fmt(e["main"], 1)}% | {fmt(e["exact"], 1)}% | {fmt(e["depth"], 1)} |')
        else:
            o(f'| {PERF_LABELS[m]} | {fmt(e["rate"], 1)} | {fmt(e["slowdown"])}x | | | | | | | | | | |')
    o('')
    o(f'perf.data bytes per sample, DWARF over SFrame: **{fmt(bytes_ratio, 1)}x**.')
    o('')
    for m in ('sframe', 'dwarf'):
        miss = E.get(m, {}).get('miss')
        if miss is not None:
            o(f'- {PERF_LABELS[m]}: samples that do not reach main, by the object of their leaf frame: '
              + (', '.join(f'{d} {c}' for d, c in sorted(miss.items(), key=lambda x: -x[1]))
                 or 'none') + '.')
    o('- Debian\'s libc.so.6 and ld.so have neither SFrame nor frame pointers: a sample whose '
      'leaf is there loses its callers under SFrame (the frame-pointer fallback cannot step out '
      'of it); DWARF unwinds them from their .eh_frame.')
    o('')


def render_registration(fig, ok, env, o):
    """c. Registration: time and kernel memory."""
    M, R, mem_k = fig.M, fig.R, fig.mem_k
    o('## c. Registration (prctl UNWIND_USER_SFRAME_REGISTER)')
    o('')
    o('Synthetic V2 sections (tools/testing/selftests/unwind_user/sframe_gen.c): N functions of '
      '32 bytes with the 3 rows of a frame-pointer function, over an executable anonymous '
      'mapping. Time: median of the REGISTER calls (each followed by UNREGISTER). Kernel memory: '
      '`SUnreclaim` of /proc/meminfo (slab and large kmalloc) after registering K sections minus '
      'before, after letting RCU free the retired tables, divided by K. The K sections are one '
      'memfd mapped K times, each followed by its own text mapping, so user memory stays at one '
      'copy; the kernel validates and registers each separately. `SUnreclaim` moves in whole '
      'slab pages (and on a debug kernel includes kmemleak\'s metadata); `MemFree` (also shown) '
      'moves by hundreds of kB with the per-CPU page lists and is not used for the verdict.')
    o('')
    o('| FDEs | section bytes | REGISTER median | per FDE |')
    o('|---:|---:|---:|---:|')
    for kv in R:
        o(f'| {kv["fdes"]} | {kv["sframe_bytes"]} | {fmt(kv["median_ns"] / 1e3, 1)} us | '
          f'{fmt(kv["median_ns"] / kv["fdes"], 1)} ns |')
    o('')
    o('| FDEs | section bytes | K | kernel bytes per registration (SUnreclaim) | (MemFree) | SUnreclaim after unregistering all, per registration |')
    o('|---:|---:|---:|---:|---:|---:|')
    for kv in sorted(M, key=lambda kv: (-kv['k'], kv['fdes'])):
        o(f'| {kv["fdes"]} | {kv["sframe_bytes"]} | {kv["k"]} | **{fmt(kv["per_reg"], 0)}** | '
          f'{fmt(kv["per_reg_memfree"], 0)} | '
          f'{fmt(kv["after_unreg_d_sunreclaim_kb"] * 1024 / kv["k"], 0)} |')
    o('')
    o(f'One 4 KiB slab page more or less moves a figure by {4096 / mem_k:.0f} B at K={mem_k} and '
      f'by 4 B at K=1000; negative figures are that noise.')
    o('')
    o('By construction the registry keeps one entry per section in a sorted table that is '
      'copied on every change, with a 2 KiB rule cache, and for each section its header and '
      'FDEs, packed to 20 bytes a function (kvmalloc, charged to the memory cgroup; at most '
      '16 MiB per process) (kernel/unwind_user/registry.rs). The rows (FREs) stay in user '
      'memory.')
    o('')


def render_growth(fig, ok, env, o):
    """d. Growth: the lookup against the number of functions."""
    G, cfg, fit, gdepth, per10 = fig.G, fig.cfg, fig.fit, fig.gdepth, fig.per10
    o('## d. Growth: SFrame lookup against the number of functions')
    o('')
    o(f'`growth_N` (bench/gen_funcs.py): N generated functions plus the driver\'s, same flags; '
      f'a chain of {gdepth} frames through 64 functions spread evenly over the text. Warm, the '
      f'fastest of {cfg.get("growth_rounds", "?")} rounds over all sizes in turn (median in '
      'parentheses).')
    o('')
    o('| binary | FDEs | .sframe bytes | frames | sframe ns/frame | fp ns/frame | sframe/fp | ips equal |')
    o('|---|---:|---:|---:|---:|---:|---:|---|')
    for g in G:
        o(f'| {g["binary"]} | {g["fdes"]} | {g["sframe_bytes"]} | {g["frames"]} | '
          f'**{fmt(g["sf"], 0)}** ({fmt(g["sf_med"], 0)}) | {fmt(g["fp"], 0)} ({fmt(g["fp_med"], 0)}) | '
          f'{fmt(g["sf"] / g["fp"] if g["sf"] and g["fp"] else None)} | '
          f'{"yes" if g["match"] == 1 else "NO"} |')
    o('')
    for lo, hi, r, dlt in per10:
        o(f'- {lo} -> {hi} functions (10x): sframe ns/frame x{fmt(r)} (+{fmt(dlt, 0)} ns).')
    if fit:
        o(f'- least squares over all binaries: sframe ns/frame = {fmt(fit["icpt"], 0)} + '
          f'{fmt(fit["slope"], 0)} x log2(FDEs), R^2 = {fmt(fit["r2"], 3)}: about '
          f'{fmt(fit["slope"], 0)} ns per halving of the search (one more binary-search probe, a '
          f'user copy), and {fmt(fit["icpt"], 0)} ns for the rest of the SFrame step.')
    o('')


def sframe_of(path):
    """The number of FDEs and the bytes of the PT_GNU_SFRAME section of the
    x86-64 ELF file @path (the SFrame header's num_fdes), or (None, None)."""
    try:
        with open(path, 'rb') as f:
            b = f.read()
    except OSError:
        return None, None
    if b[:5] != b'\x7fELF\x02':
        return None, None
    phoff, = struct.unpack_from('<Q', b, 32)
    phentsize, phnum = struct.unpack_from('<HH', b, 54)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from('<IIQQQQ', b, phoff + i * phentsize)
        if p_type == 0x6474E554 and p_filesz >= 12:
            return struct.unpack_from('<I', b, p_offset + 8)[0], p_filesz
    return None, None


def render_exec(fig, ok, env, o):
    """e. What exec pays for a section."""
    G, execs = fig.G, fig.execs
    o('## e. What exec pays for a section')
    o('')
    o('fork + execve + exit of a growth program (it exits at once) with its section (a real '
      '`PT_GNU_SFRAME`, of which exec reads nothing: the file\'s table is built by the first '
      'walk that needs it), against the same program with the `.sframe` section header removed '
      '(an empty `PT_GNU_SFRAME`); interleaved, median.')
    o('')
    o('| binary | FDEs | .sframe bytes | exec with | exec without | difference | per MiB of section |')
    o('|---|---:|---:|---:|---:|---:|---:|')
    for e in execs:
        name = str(e['binary']).rsplit('/', 1)[-1].removesuffix('_sframe')
        g = next((g for g in G if g['binary'] == name), {})
        if not g:
            fdes, size = sframe_of(os.path.join(fig.build, name))
            g = dict(fdes=fdes, sframe_bytes=size) if size else {}
        d = e['sframe_median_ns'] - e['nosframe_median_ns']
        mib = g.get('sframe_bytes', 0) / (1 << 20)
        o(f'| {name} | {g.get("fdes", "?")} | {g.get("sframe_bytes", "?")} | '
          f'{fmt(e["sframe_median_ns"] / 1000, 0)} us | {fmt(e["nosframe_median_ns"] / 1000, 0)} us | '
          f'{fmt(d / 1000, 0)} us | {fmt(d / 1000 / mib if mib else None, 0)} us |')
    o('')


def render_breakdown(fig, ok, env, o):
    """Where the SFrame step's time goes (the kernel profile)."""
    G, W, byn, cats, cfg = fig.G, fig.W, fig.byn, fig.cats, fig.cfg
    deep, fit, per_frame, profiles, rest = fig.deep, fig.fit, fig.per_frame, fig.profiles, fig.rest
    top = fig.top
    o('## Breakdown of the SFrame step')
    o('')
    fp_deep = W['step', deep, 'fp'][0]
    o(f'Per frame, warm (fastest round), deep stack: frame pointers {fmt(fp_deep, 0)} ns; SFrame on a frame no '
      f'section covers (registry miss, remembered in the rule cache, then the frame-pointer rule) '
      f'{fmt(W["uncovered", deep, "sframe"][0], 0)} ns; SFrame on covered frames '
      f'{fmt(W["step", deep, "sframe"][0], 0)} ns with {G[0]["fdes"] if G else "?"} FDEs'
      + (f', {fmt(byn[100000]["sf"], 0)} ns with {byn[100000]["fdes"]} FDEs' if 100000 in byn else '')
      + (f'; fitted, {fmt(fit["icpt"], 0)} ns + {fmt(fit["slope"], 0)} ns per log2(FDEs)' if fit else '')
      + '.')
    o('')
    if profiles:
        nsamp = {u: round(sum(c for _, c, _ in rows) * 100 / max(sum(p for p, _, _ in rows), 1e-9))
                 for u, rows in profiles.items()}
        o(f'Kernel profile of the deep loop, {cfg.get("profile_iters", "?")} SFrame unwinds '
          f'({nsamp.get("sframe", "?")} samples) and 8 times as many frame-pointer ones '
          f'({nsamp.get("fp", "?")} samples) (`perf record -e cpu-clock -F 2000` in the guest, '
          'self time by symbol, symbols under 0.3% left out; ns per frame = share of samples x '
          'the measured time per frame):')
        o('')
        o('| where | sframe: share | ns/frame | fp: share | ns/frame |')
        o('|---|---:|---:|---:|---:|')
        for c in [n for n, _ in CATEGORIES] + ['other (syscall, timer, perf, user space)']:
            if c not in cats:
                continue
            cells = []
            for u in ('sframe', 'fp'):
                pct = cats[c].get(u, 0.0)
                ns = pct / 100 * per_frame[u] if per_frame.get(u) else None
                cells += [f'{pct:.1f}%', fmt(ns, 0)]
            o(f'| {c} | ' + ' | '.join(cells) + ' |')
        o(f'| total measured | | {fmt(per_frame.get("sframe"), 0)} | | {fmt(per_frame.get("fp"), 0)} |')
        o('')
        if rest:
            o(f'Without the time in lockdep and the debug checks (an estimate from the profile, '
              f'not a measurement of a production kernel): SFrame {fmt(rest["sframe"], 0)} ns, '
              f'frame pointers {fmt(rest["fp"], 0)} ns per frame, ratio '
              f'**{fmt(rest["sframe"] / rest["fp"])}**.')
            o('')
        o(f'User reads per frame, from the code (kernel/unwind_user/step.rs, rust/sframe): the '
          f'frame-pointer step reads 2 words (return address, saved frame pointer); the SFrame '
          f'step reads the same 2 words, and for a PC that is not in the rule cache the '
          f'function\'s rows: one copy of at most 64 bytes, the FDE having been found in kernel '
          f'memory (the header and the FDEs are not read again after registration). A cached PC '
          f'(or one no section covers) costs one or two reads of the address space\'s rule cache, '
          f'no lock and no registry search; the profile above '
          f'shows what each costs on this kernel. Fitted over the growth binaries: '
          f'{fmt(fit["icpt"] if fit else None, 0)} ns + {fmt(fit["slope"] if fit else None, 0)} '
          f'ns per doubling of the FDEs.')
        o('')
        o('Top symbols under the SFrame unwinder: ' + '; '.join(
            f'{n} {pct:.1f}%' for pct, n in top) + '.')
        o('')


def render_goals(fig, ok, env, o):
    """The goals and their verdicts, then the problems found."""
    E, G, bytes_ratio, cold_med, fit = fig.E, fig.G, fig.bytes_ratio, fig.cold_med, fig.fit
    k1000, leak, m1000, m20, miss_x = fig.k1000, fig.leak, fig.m1000, fig.m20, fig.miss_x
    noalloc_last, per10, problems, ratio, shallow = fig.noalloc_last, fig.per10, fig.problems, fig.ratio, fig.shallow
    shallow_x, us, us_x, warm_x = fig.shallow_x, fig.us, fig.us_x, fig.warm_x
    o('## Goals')
    o('')
    o('| goal | measured | verdict |')
    o('|---|---|---|')
    # Issue 12's targets, production kernel, ratios within this run.
    o(f'| warm SFrame step <= 1.5x the frame-pointer step, deep and shallow | deep {fmt(warm_x)}x, '
      f'shallow {fmt(shallow_x)}x | **{verdict(ok["warm"])}** |')
    o(f'| cold SFrame step <= 3x (median of the deep stack; the mean is noisier) | {fmt(cold_med)}x '
      f'(shallow median {fmt(ratio.get(("cold_median", shallow)))}x) '
      f'| **{verdict(ok["cold"])}** |')
    o(f'| cold SFrame step with the section attached to the file <= 2x, shallow (issue 23; mean) '
      f'| {fmt(fig.cold_file_shallow)}x (deep {fmt(ratio.get(("cold_file", fig.deep)))}x) '
      f'| **{verdict(ok["cold_file"])}** |')
    o(f'| miss path (no section covers the frame) <= 1.2x | {fmt(miss_x)}x '
      f'| **{verdict(ok["miss"])}** |')
    if G:
        o(f'| flat in the number of FDEs ({G[0]["fdes"]} to {G[-1]["fdes"]}) | '
          + ', '.join(f'{g["fdes"]}: {fmt(g["sf"], 0)} ns' for g in G)
          + f' ({fmt(G[-1]["sf"] / G[0]["sf"])}x from first to last) '
          f'| **{verdict(ok["flat"])}** |')
    for m, what in (('sframe', 'deferred SFrame (`fp,defer`)'),
                    ('nmisf', 'sample-time SFrame (plain `fp`)')):
        r = us_x[m]
        o(f'| end to end (section b): time lost per sample, '
          f'{what} <= 1.2x frame pointers alone, well below dwarf | '
          f'{fmt(us[m], 1)} us against {fmt(us["fp"], 1)} us ({fmt(r)}x); dwarf {fmt(us["dwarf"], 1)} us '
          f'| **{verdict(ok[m])}** |')
    fpb, fpbd = E.get('fpb', {}).get('us_per_sample'), E.get('fpbdefer', {}).get('us_per_sample')
    fpbfp = E.get('fpbfp', {}).get('us_per_sample')
    if fpb and fpbfp:
        o(f'| end to end (section b): fp build (no table describes it), time lost per sample '
          f'with plain `fp`, SFrame taking part against not (mainline\'s walk) <= 1.02x | '
          f'{fmt(fpb, 2)} us against {fmt(fpbfp, 2)} us ({fmt(fpb / fpbfp if fpbfp > 0 else None, 3)}x) '
          f'| **{verdict(fpb <= 1.02 * fpbfp)}** |')
    if fpb and fpbd:
        o(f'| (no target) what deferral itself costs: fp build, time lost per sample with '
          f'`fp,defer` against `fp` | {fmt(fpbd, 1)} us against {fmt(fpb, 1)} us '
          f'({fmt(fpbd / fpb if fpb > 0 else None)}x) | |')
    sf, dw = E.get('sframe', {}), E.get('dwarf', {})
    o(f'| perf.data per sample >= 20x smaller than dwarf, stacks at least as complete | '
      f'{fmt(bytes_ratio, 1)}x smaller; reach main {fmt(sf.get("main"), 1)}% vs '
      f'{fmt(dw.get("main"), 1)}%, exact {fmt(sf.get("exact"), 1)}% vs {fmt(dw.get("exact"), 1)}% '
      f'| **{verdict(ok["perf"])}**' + ('' if ok["perf"] or not bytes_ratio or bytes_ratio < 20 else
                                     ' (size met, completeness not)') + ' |')
    if 1 in m20 and 100000 in m20:
        o(f'| kernel memory per registration: the FDE table (20 B a function) and a fixed part, '
          f'at most 22 B a function + 8 KiB '
          f'| {fmt(m20[1]["per_reg"], 0)} B for a '
          f'{m20[1]["sframe_bytes"]}-byte section, {fmt(m20[100000]["per_reg"], 0)} B for a '
          f'{m20[100000]["sframe_bytes"]}-byte one (K={m20[1]["k"]} and {m20[100000]["k"]})'
          + (f'; {fmt(m1000[1]["per_reg"], 0)} B each for 1000 registrations (median of '
             f'{len(k1000)} runs: ' + ', '.join(fmt(kv['per_reg'], 0) for kv in k1000) + ')'
             if 1 in m1000 else '')
          + f' | **{verdict(ok["mem"])}** |')
    o(f'| no allocation in the unwind path | static: {noalloc_last.replace("noalloc: ", "")} '
      f'(noalloc.py over vmlinux); runtime: SUnreclaim {leak.get("d_sunreclaim_kb", "?")} kB '
      f'after {leak.get("unwinds", "?")} deep unwinds | **{verdict(ok["alloc"])}** |')
    o(f'| lookup grows at most logarithmically with the number of functions | '
      + ', '.join(f'x{fmt(r)} per 10x ({lo}->{hi}, +{fmt(dlt, 0)} ns)' for lo, hi, r, dlt in per10)
      + (f'; a + b log2(FDEs) fits with R^2 {fmt(fit["r2"], 3)}' if fit else '')
      + f' | **{verdict(ok["log"])}** |')
    o('')
    if problems:
        o('## Problems')
        o('')
        for p in problems:
            o(f'- {p}')
        o('')


def render(fig, ok, env):
    """results.md: the figures @figig (measure()), the verdicts @ok (judge()),
    the run's @env (environment())."""
    L = []
    for section in (render_header, render_step, render_perf, render_registration,
                    render_growth, render_exec, render_breakdown, render_goals):
        section(fig, ok, env, L.append)
    return '\n'.join(L) + '\n'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--results', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--build', required=True)
    ap.add_argument('--accel', required=True)
    ap.add_argument('--noalloc', required=True)
    ap.add_argument('--kernel', default='?')
    ap.add_argument('--seconds', type=int, default=0)
    ap.add_argument('--config', default='')
    a = ap.parse_args()

    recs, texts, _, profiles = parse(a.results)
    noalloc = open(a.noalloc).read().splitlines() if os.path.exists(a.noalloc) else []
    fig = measure(recs, texts, profiles, a.build, noalloc[-1] if noalloc else 'noalloc: not run')
    for mode in fig.E:
        if mode in texts:
            with open(os.path.join(a.out, f'{mode}.perf-script.txt'), 'w') as out:
                out.write(texts[mode])
    text = render(fig, judge(fig), environment(a))
    with open(os.path.join(a.out, 'results.md'), 'w') as out:
        out.write(text)
    print(text)
    print(f'bench: results in {os.path.join(a.out, "results.md")}')

    def lk(n):
        v = fig.sfn(n)
        return f'{v:.0f}' if v else 'n/a'
    print(f'bench: sframe_fp_step_ratio warm={fmt(fig.warm_x)} cold={fmt(fig.cold_med)}')
    print(f'bench: dwarf_sframe_bytes_ratio={fmt(fig.bytes_ratio, 1)}')
    print(f'bench: lookup_ns fdes_1k={lk(1000)} fdes_10k={lk(10000)} fdes_100k={lk(100000)}')
    return 1 if fig.problems else 0


if __name__ == '__main__':
    sys.exit(main())
