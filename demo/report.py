#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host side of `make demo`: split the guest's results.log into the three
perf script outputs, print the comparison table, write collapsed stacks and
flame graphs (inferno-flamegraph if installed, else a built-in SVG renderer),
and end with the one-line summary.

Usage: python3 -m demo.report RESULTS_LOG OUTDIR   (from the top directory)
"""
import html
import os
import re
import shutil
import subprocess
import sys
import zlib

from demo import perfscript
from harness import guestlog

MODES = [('fp', 'fp (IRQ-time walker)', '--call-graph fp'),
         ('sframe', 'SFrame (deferred)', '--call-graph fp,defer'),
         ('nmi', 'SFrame (sample time)', '--call-graph fp'),
         ('dwarf', 'DWARF (perf copy)', '--call-graph dwarf'),
         ('audit', 'SFrame + LD_AUDIT', '--call-graph fp,defer'),
         ('auditnmi', 'LD_AUDIT (sample time)', '--call-graph fp')]

# The interpreter rows: Debian's lua5.4 running demo/interp.lua, without and
# with tools/unwind_user/lua's module (user-assisted unwinding).
LUA_MODES = [('luaplain', 'Lua, kernel walk', '--call-graph fp,defer'),
             ('lua', 'Lua + unwind_assist', '--call-graph fp,defer')]
# interp.lua's call graph: each Lua function and its possible callers; the
# main chunk is named after the file.
LUA_CALLERS = {'fib': {'fib', 'work'}, 'checksum': {'work'}, 'render': {'work'},
               'work': {'run'}, 'run': {'interp.lua'}}
LUA_ROOT = 'interp.lua'
# The module's signal handler, which answers the kernel's requests: a sample
# taken in it is the cost of the profiling, not the script's work (the
# kernel does not ask a thread that blocks the signal, and the handler
# blocks it while it runs).
LUA_HANDLER = 'on_request'


def lua_stats(samples):
    """Of the samples taken while the script ran (from the first to the last
    that names a Lua function: not the interpreter's start-up, which loads
    and compiles the script, nor its exit), how many name a Lua function,
    and how many have Lua frames (first in the stack, as perf puts a task's
    own frames) that are each called by the next, up to the main chunk;
    the samples taken in the module's handler are counted apart, not in
    the others. Returns (samples while the script ran, out of the handler,
    named, right, in the handler)."""
    names = set(LUA_CALLERS) | {LUA_ROOT}
    named_at = [any(f in names for f in perfscript.syms(s)) for s in samples]
    if True not in named_at:
        return len(samples), len(samples), 0, 0, 0
    first = named_at.index(True)
    last = len(named_at) - 1 - named_at[::-1].index(True)
    named = right = handler = 0
    for s in samples[first:last + 1]:
        fr = perfscript.syms(s)
        if LUA_HANDLER in fr:
            handler += 1
            continue
        lua = []
        for f in fr:
            if f not in names:
                break
            lua.append(f)
        named += any(f in names for f in fr)
        right += bool(lua) and lua[-1] == LUA_ROOT and all(
            lua[i + 1] in LUA_CALLERS.get(lua[i], ()) for i in range(len(lua) - 1))
    ns = last + 1 - first
    return ns, ns - handler, named, right, handler


def split_log(path):
    """The guest's results.log: {mode: its demo-run fields, and images or
    rounds from the workload's note}, {mode: perf script text}, the notes."""
    log = guestlog.read(path)
    runs, notes = {}, []
    for line in log.lines:
        m = re.match(r'### demo-run (\w+) (.*)', line)
        if m:
            runs[m.group(1)] = guestlog.fields(m.group(2))
        elif line.startswith('# ') or line.startswith('### demo-start'):
            notes.append(line)
            m = re.match(r'# (\w+): imgdemo: (\d+) images in ([\d.]+) s', line)
            if m:
                runs.setdefault(m.group(1), {})['images'] = m.group(2)
            m = re.match(r'# (\w+): interp: (\d+) rounds', line)
            if m:
                runs.setdefault(m.group(1), {})['rounds'] = m.group(2)
    return runs, log.texts('demo-script', 'demo'), notes


def inferno():
    for p in (shutil.which('inferno-flamegraph'),
              os.path.expanduser('~/.cargo/bin/inferno-flamegraph')):
        if p and os.access(p, os.X_OK):
            return p
    return None


def color(name):
    h = zlib.crc32(name.encode())
    if name.startswith('[') or name == '[unknown]':
        return 'rgb(190,190,190)'
    return f'rgb({205 + h % 50},{80 + (h >> 8) % 120},{40 + (h >> 16) % 50})'


def svg_flamegraph(folded, title, width=1200, row=16):
    """A minimal flame graph: same layout idea as flamegraph.pl."""
    root = {'n': 0, 'c': {}}
    for line in folded.splitlines():
        stack, cnt = line.rsplit(' ', 1)
        cnt = int(cnt)
        node = root
        node['n'] += cnt
        for fr in stack.split(';'):
            node = node['c'].setdefault(fr, {'n': 0, 'c': {}})
            node['n'] += cnt
    total = root['n'] or 1
    rects = []
    maxd = [0]

    def walk(node, x, depth):
        for name in sorted(node['c']):
            ch = node['c'][name]
            w = ch['n'] / total * (width - 20)
            rects.append((x, depth, w, name, ch['n']))
            maxd[0] = max(maxd[0], depth)
            walk(ch, x, depth + 1)
            x += w
    walk(root, 10, 0)
    height = (maxd[0] + 1) * row + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="Verdana" font-size="11">',
           f'<rect width="100%" height="100%" fill="#f8f8f0"/>',
           f'<text x="{width // 2}" y="24" text-anchor="middle" font-size="16">'
           f'{html.escape(title)}</text>']
    for x, d, w, name, n in rects:
        y = height - 20 - (d + 1) * row
        label = name if w > 7 * len(name) else name[:max(0, int(w / 7) - 2)] + '..' if w > 28 else ''
        out.append(f'<g><title>{html.escape(name)} ({n} samples, {100 * n / total:.1f}%)</title>'
                   f'<rect x="{x:.1f}" y="{y}" width="{max(w - 0.5, 0.1):.1f}" height="{row - 1}" '
                   f'fill="{color(name)}" rx="2"/>'
                   f'<text x="{x + 3:.1f}" y="{y + row - 4}">{html.escape(label)}</text></g>')
    out.append('</svg>\n')
    return '\n'.join(out)


def flamegraph(folded, title, svg):
    tool = inferno()
    if tool:
        r = subprocess.run([tool, '--title', title, '--width', '1200'],
                           input=folded, capture_output=True, text=True)
        if r.returncode == 0:
            with open(svg, 'w') as f:
                f.write(r.stdout)
            return 'inferno'
    with open(svg, 'w') as f:
        f.write(svg_flamegraph(folded, title))
    return 'built-in'


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    log, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    runs, texts, notes = split_log(log)
    for n in notes:
        print(n)
    rows, res = [], {}
    # The audit rows only if the guest had the LD_AUDIT module to run them.
    want = [m for m, _, _ in MODES if not m.startswith('audit') or m in runs]
    for mode, label, opt in MODES:
        if mode not in want:
            continue
        if mode not in texts:
            print(f'demo: no perf script output for {mode} (see {log})', file=sys.stderr)
            continue
        txt = os.path.join(outdir, f'{mode}.perf-script.txt')
        with open(txt, 'w') as f:
            f.write(texts[mode])
        lost = []
        samples = perfscript.parse(texts[mode], lost)
        st = perfscript.stats(samples)
        st['lost'] = sum(lost)
        n = st['samples']
        nbytes = int(runs.get(mode, {}).get('bytes', 0))
        res[mode] = dict(st, bytes=nbytes, main=pct(st['reach_main'], n),
                         bps=nbytes / n if n else 0.0)
        fold = perfscript.folded(samples)
        with open(os.path.join(outdir, f'{mode}.folded'), 'w') as f:
            f.write(fold)
        svg = os.path.join(outdir, f'flamegraph-{mode}.svg')
        how = flamegraph(fold, f'imgdemo, {label}: {opt} ({n} samples)', svg)
        res[mode]['svg'] = (svg, how)
        rows.append((label, opt, st, res[mode], runs.get(mode, {})))

    hdr = (f"{'unwinder':<22} {'perf record option':<22} {'samples':>7} {'reach main':>10} "
           f"{'not':>5} {'exact':>7} {'hot chain':>9} {'mean depth':>10} {'bytes/sample':>12} {'lost':>6} {'images':>6}")
    print()
    print(hdr)
    print('-' * len(hdr))
    for label, opt, st, r, run in rows:
        n = st['samples']
        print(f"{label:<22} {opt:<22} {n:>7} {r['main']:>9.1f}% {n - st['reach_main']:>5} "
              f"{pct(st['exact'], st['workload_leaf']):>6.1f}% {pct(st['hot_chain'], n):>8.1f}% "
              f"{st['depth_sum'] / n if n else 0:>10.2f} {r['bps']:>12.0f} {st['lost']:>6} "
              f"{run.get('images', '?'):>6}")
    print()
    print('reach main: share of samples whose user stack reaches main(); not: how many do not;')
    print('exact: of samples whose leaf is a workload function, share with every caller right up to main;')
    print('hot chain: share of samples with convolve_pixel>filter_row>filter_pass>filter_image>'
          'apply_filters>process_image>run_jobs>main in order;')
    print('bytes/sample: perf.data size / samples (headers included);')
    print('lost: samples perf record could not keep up with (PERF_RECORD_LOST);')
    print('images: work the workload got done in its fixed guest time under profiling.')
    lua_rows = [m for m, _, _ in LUA_MODES if m in runs]
    if lua_rows:
        print()
        lh = (f"{'interpreter':<22} {'perf record option':<22} {'samples':>7} {'in script':>9} "
              f"{'handler':>7} {'Lua named':>9} {'Lua right':>9} {'bytes/sample':>12} {'lost':>6} "
              f"{'rounds':>6}")
        print(lh)
        print('-' * len(lh))
    for mode, label, opt in LUA_MODES:
        if mode not in lua_rows:
            continue
        if mode not in texts:
            print(f'demo: no perf script output for {mode} (see {log})', file=sys.stderr)
            want.append(mode)
            continue
        want.append(mode)
        with open(os.path.join(outdir, f'{mode}.perf-script.txt'), 'w') as f:
            f.write(texts[mode])
        lost = []
        samples = perfscript.parse(texts[mode], lost)
        n = len(samples)
        ns, nw, named, right, handler = lua_stats(samples)
        nbytes = int(runs[mode].get('bytes', 0))
        res[mode] = dict(named=pct(named, nw), right=pct(right, nw),
                         handler=pct(handler, ns), bps=nbytes / n if n else 0.0)
        fold = perfscript.folded(samples)
        with open(os.path.join(outdir, f'{mode}.folded'), 'w') as f:
            f.write(fold)
        svg = os.path.join(outdir, f'flamegraph-{mode}.svg')
        res[mode]['svg'] = (svg, flamegraph(fold, f'lua5.4 interp.lua, {label}: {opt} ({n} samples)', svg))
        print(f"{label:<22} {opt:<22} {n:>7} {ns:>9} {res[mode]['handler']:>6.1f}% "
              f"{res[mode]['named']:>8.1f}% "
              f"{res[mode]['right']:>8.1f}% {res[mode]['bps']:>12.0f} {sum(lost):>6} "
              f"{runs[mode].get('rounds', '?'):>6}")
    if lua_rows:
        print()
        print('in script: samples from the first to the last that names a Lua function '
              '(not the interpreter\'s start-up and exit);')
        print('handler: of those, share taken in the module\'s signal handler (the cost of the answers);')
        print('Lua named: of the others, share with a Lua function of interp.lua in the stack;')
        print('Lua right: of the others, share whose Lua frames are each called by the next, up to the main chunk;')
        print('rounds: work the script got done in its fixed guest time under profiling.')
    print()
    for mode, _, _ in MODES + LUA_MODES:
        if mode in res:
            svg, how = res[mode]['svg']
            print(f'demo: flame graph {mode}: {svg} ({how})')
    print(f'demo: perf script outputs and collapsed stacks in {outdir}')

    def g(m, k, fmt):
        return fmt % res[m][k] if m in res else 'n/a'
    print('demo: sample_time_sframe complete_stacks=%s bytes_per_sample=%s '
          '(plain --call-graph fp, no defer)' % (g('nmi', 'main', '%.1f%%'), g('nmi', 'bps', '%.0f')))
    print('demo: complete_stacks fp=%s sframe=%s dwarf=%s bytes_per_sample fp=%s sframe=%s dwarf=%s' % (
        g('fp', 'main', '%.1f%%'), g('sframe', 'main', '%.1f%%'), g('dwarf', 'main', '%.1f%%'),
        g('fp', 'bps', '%.0f'), g('sframe', 'bps', '%.0f'), g('dwarf', 'bps', '%.0f')))
    print('demo: with_ld_audit complete_stacks=%s bytes_per_sample=%s '
          '(--call-graph fp,defer, libc and ld.so registered by tools/unwind_user/audit)' % (
              g('audit', 'main', '%.1f%%'), g('audit', 'bps', '%.0f')))
    print('demo: with_ld_audit_sample_time complete_stacks=%s bytes_per_sample=%s '
          '(plain --call-graph fp, same registration) dwarf=%s' % (
              g('auditnmi', 'main', '%.1f%%'), g('auditnmi', 'bps', '%.0f'),
              g('dwarf', 'main', '%.1f%%')))
    print('demo: interpreter lua_right=%s lua_named=%s in_handler=%s without_module_named=%s '
          'bytes_per_sample=%s (lua5.4 -l unwind_assist, --call-graph fp,defer)' % (
              g('lua', 'right', '%.1f%%'), g('lua', 'named', '%.1f%%'),
              g('lua', 'handler', '%.1f%%'),
              g('luaplain', 'named', '%.1f%%'), g('lua', 'bps', '%.0f')))
    return 0 if all(m in res for m in want) else 1


if __name__ == '__main__':
    sys.exit(main())
