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

from demo import perfscript, pywork
from harness import guestlog

MODES = [('fp', 'fp (IRQ-time walker)', '--call-graph fp'),
         ('sframe', 'SFrame (deferred)', '--call-graph fp,defer'),
         ('nmi', 'SFrame (sample time)', '--call-graph fp'),
         ('dwarf', 'DWARF (perf copy)', '--call-graph dwarf'),
         ('audit', 'SFrame + LD_AUDIT', '--call-graph fp,defer'),
         ('auditnmi', 'LD_AUDIT (sample time)', '--call-graph fp'),
         ('file', 'SFrame, agent, -a', '--call-graph fp,defer')]

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
# The interpreter's binary, whose frames are the only native ones besides
# libc's start that may call Lua functions.
LUA_BINARY = 'lua5.4'


def workload_window(samples, in_workload):
    """The samples from the first to the last for which @in_workload is
    true (not the interpreter's start-up, nor its exit), or None."""
    at = [i for i, s in enumerate(samples) if in_workload(s)]
    return samples[at[0]:at[-1] + 1] if at else None


def keep_profile(outdir, mode, text, samples, title):
    """Keep @mode's perf script output, its collapsed stacks and its flame
    graph in @outdir: (the flame graph's path, what drew it)."""
    with open(os.path.join(outdir, f'{mode}.perf-script.txt'), 'w') as f:
        f.write(text)
    fold = perfscript.folded(samples)
    with open(os.path.join(outdir, f'{mode}.folded'), 'w') as f:
        f.write(fold)
    svg = os.path.join(outdir, f'flamegraph-{mode}.svg')
    return svg, flamegraph(fold, title, svg)


def lua_stats(samples):
    """Of the samples taken while the script ran (from the first to the last
    that names a Lua function: not the interpreter's start-up, which loads
    and compiles the script, nor its exit), how many name a Lua function;
    how many have Lua frames (the module's, from its perf map) that are each
    called by the next, up to the main chunk; and how many have native code
    below a Lua function that the interpreter's start does not explain (a
    callee put as its caller). The samples taken in the module's handler
    are counted apart, not in the others. Returns (samples while the script
    ran, out of the handler, named, right, in the handler, native caller)."""
    names = set(LUA_CALLERS) | {LUA_ROOT}
    window = workload_window(samples, lambda s: any(f in names for f in perfscript.syms(s)))
    if window is None:
        return len(samples), len(samples), 0, 0, 0, 0
    named = right = handler = wrong = 0
    for s in window:
        fr = perfscript.syms(s)
        if LUA_HANDLER in fr:
            handler += 1
            continue
        lua, below = perfscript.interpreted(s, LUA_BINARY)
        named += any(f in names for f in fr)
        right += perfscript.interp_right(lua, LUA_CALLERS, LUA_ROOT)
        wrong += below
    ns = len(window)
    return ns, ns - handler, named, right, handler, wrong


# The Python rows: Debian's python3.11 running demo/pywork.py, without and
# with tools/unwind_user/python's extension; the torture run apart.
PY_MODES = [('pyplain', 'Python, kernel walk', '--call-graph fp,defer'),
            ('py', 'Python + unwind_assist', '--call-graph fp,defer')]
PY_BINARY = 'python3.11'
# Where a native walk is in Python code even when no Python frame is named.
PY_LOOP = '_PyEval_EvalFrameDefault'
# The extension's own code: a sample there is the cost of an answer.
PY_HANDLER_DSO = re.compile(r'/_unwind_assist[^/]*\.so$')


def py_frame(name):
    """(qualified name, file) of a frame the extension named
    "QUALNAME (FILE:LINE)"."""
    m = re.match(r'(.*) \((.*):\d+\)$', name)
    return (m.group(1), m.group(2)) if m else (name, '')


def py_right(names):
    """Whether Python frames @names, leaf first, reach a root of pywork.py
    (its module, or threading's start of a thread), each function of
    pywork.py, and each function of the standard library it calls or that
    calls it, called by one of its callers (pywork.CALLERS, STDLIB_CALLERS)."""
    chain = [py_frame(n) for n in names]
    for i, frame in enumerate(chain):
        if frame in pywork.ROOTS:
            break
    else:
        return False
    chain = chain[:i + 1]
    for (c, cf), (p, _) in zip(chain, chain[1:]):
        callers = (pywork.CALLERS.get(c) if cf == 'pywork.py'
                   else pywork.STDLIB_CALLERS.get((c, cf)))
        if callers is not None and p not in callers:
            return False
    return True


# json's C encoder, a DSO of its own in Debian: in pywork.py's encode(),
# called by JSONEncoder.iterencode, calling to_jsonable (default=); its
# deallocation runs as iterencode's frame is cleared, by the loop that
# runs JSONEncoder.encode.
PY_JSON_DSO = re.compile(r'/_json\.cpython[^/]*\.so$')
PY_JSON_CALLERS = {'JSONEncoder.iterencode', 'JSONEncoder.encode'}
# An allocation that runs the garbage collector, which may free an encoder
# (its deallocation in json's DSO) below whatever Python code allocated.
PY_GC_ALLOCS = {'PyType_GenericAlloc', '_PyObject_GC_New', '_PyObject_GC_NewVar'}


def py_misplaced(sample):
    """Whether Python frames are named in @sample at a wrong depth: a loop
    frame left in a spliced stack (every one is replaced by its run), or
    json's C encoder not between the functions that call it (or free it) and
    that it calls, unless a collection run by an allocation frees it."""
    frames = sample[1]
    if any(sym == PY_LOOP for sym, _ in frames):
        return True
    py = [(i, py_frame(sym)) for i, (sym, dso) in enumerate(frames)
          if perfscript.PERF_MAP.search(dso)]
    # Only the workload's own use: json's import and JSONDecoder call it too.
    if ('encode', 'pywork.py') not in (f for _, f in py):
        return False
    for i, (_, dso) in enumerate(frames):
        if not PY_JSON_DSO.search(dso):
            continue
        inner = [q for k, (q, _) in py if k < i]
        outer = [q for k, (q, _) in py if k > i]
        first_outer = next((k for k, _ in py if k > i), len(frames))
        if any(sym in PY_GC_ALLOCS for sym, _ in frames[i + 1:first_outer]):
            continue
        if not outer or outer[0] not in PY_JSON_CALLERS or \
                (inner and inner[-1] != 'to_jsonable'):
            return True
    return False


def py_stats(samples):
    """Of the samples taken in Python code (a Python frame named, or the
    interpreter's loop in the walk) while the workload ran (from the first
    to the last that names a workload function), outside the extension:
    how many name Python functions, how many reach a root in calling order
    (py_right), how many name them in an order the program cannot have,
    and how many have native code below a Python function that the
    interpreter's start does not explain. Returns a dict."""
    interp = {id(s): perfscript.interpreted(s, PY_BINARY) for s in samples}
    r = dict(in_python=0, named=0, right=0, bad_order=0, callee_below=0, misplaced=0,
             handler=0)
    window = workload_window(samples, lambda s: any(py_frame(f)[1] == 'pywork.py'
                                                    for f in interp[id(s)][0]))
    for s in samples if window is None else window:
        if any(PY_HANDLER_DSO.search(dso) for _, dso in s[1]):
            r['handler'] += 1
            continue
        names, below = interp[id(s)]
        if not names and PY_LOOP not in perfscript.syms(s):
            continue
        r['in_python'] += 1
        r['named'] += bool(names)
        ok = py_right(names)
        r['right'] += ok
        r['bad_order'] += bool(names) and not ok
        r['callee_below'] += below
        r['misplaced'] += bool(names) and py_misplaced(s)
    return r


def python_rows(runs, texts, outdir, res, want):
    """The Python table, its flame graphs and the torture run's line."""
    rows = [m for m, _, _ in PY_MODES if m in runs]
    if rows:
        python_table(rows, runs, texts, outdir, res, want)
    python_cost_torture(runs, res, want)


def python_table(rows, runs, texts, outdir, res, want):
    """The Python rows: pywork.py without and with the extension."""
    print()
    hdr = (f"{'interpreter':<22} {'samples':>7} {'in Python':>9} {'handler':>7} {'named':>7} "
           f"{'right':>7} {'bad order':>9} {'callee below':>12} {'misplaced':>9} {'rounds':>6} "
           f"{'children':>8}")
    print(hdr)
    print('-' * len(hdr))
    for mode, label, opt in PY_MODES:
        if mode not in rows:
            continue
        want.append(mode)
        if mode not in texts:
            print(f'demo: no perf script output for {mode}', file=sys.stderr)
            continue
        samples = perfscript.parse(texts[mode])
        st = py_stats(samples)
        run = runs[mode]
        n = st['in_python']
        res[mode] = dict(st, named_pct=pct(st['named'], n), right_pct=pct(st['right'], n),
                         handler_pct=pct(st['handler'], n + st['handler']),
                         rounds=int(run.get('rounds', 0)))
        res[mode]['svg'] = keep_profile(outdir, mode, texts[mode], samples,
                                        f'python3.11 pywork.py, {label}: {opt} '
                                        f'({len(samples)} samples)')
        print(f"{label:<22} {len(samples):>7} {n:>9} {res[mode]['handler_pct']:>6.1f}% "
              f"{res[mode]['named_pct']:>6.1f}% {res[mode]['right_pct']:>6.1f}% "
              f"{st['bad_order']:>9} {st['callee_below']:>12} {st['misplaced']:>9} "
              f"{run.get('rounds', '?'):>6} "
              f"{run.get('children_ok', '?')}/{run.get('children_failed', '?')}")
        for line in run.get('assist', []):
            print(f'  {mode}: unwind_assist: {line}')
    print()
    print('in Python: samples with a Python function named or the interpreter\'s loop in the walk,')
    print('  from the first to the last that names a workload function, out of the handler;')
    print('handler: share taken in the extension (the cost of the answers);')
    print('named, right: of those in Python, share naming Python functions, and naming them each called')
    print('  by one of its callers (demo/pywork.py CALLERS) down to the module or the thread\'s start;')
    print('bad order: samples whose Python functions are named in an order the program cannot have;')
    print('callee below: native code below a Python function that the interpreter\'s start does not explain;')
    print('misplaced: Python functions named with the interpreter\'s loop left in the stack, or json\'s C')
    print('  encoder not between JSONEncoder.iterencode (or .encode) and to_jsonable: frames at a wrong depth;')
    print('children: subprocess.run() children that exited 0 / did not.')


def python_cost_torture(runs, res, want):
    """The cost row and the torture row."""
    c = runs.get('pycost')
    if c and c.get('plain') and c.get('ext'):
        want.append('pycost')
        plain = sorted(x[1] for x in c['plain'])[len(c['plain']) // 2]
        ext = sorted(x[1] for x in c['ext'])[len(c['ext']) // 2]
        answers = sum(x[2] for x in c['ext']) / len(c['ext'])
        handler = sum(x[3] for x in c['ext']) / max(1, sum(x[2] for x in c['ext']))
        res['pycost'] = dict(lost=100.0 * (ext / plain - 1) if plain else 0.0,
                             per_answer=1e6 * (ext - plain) / answers if answers else 0.0,
                             handler=handler / 1000, answers=answers,
                             rc=max(x[0] for x in c['plain'] + c['ext']))
        print(f"cost: pywork.py --rounds in one thread under perf record -F 1000 --call-graph fp,defer: "
              f"median {plain:.3f} s without the extension, {ext:.3f} s with it "
              f"({res['pycost']['lost']:+.1f}%), {answers:.0f} answers a run: "
              f"{res['pycost']['per_answer']:.1f} us of the thread's time an answer "
              f"(signal, handler, submit), {res['pycost']['handler']:.1f} us in the handler")
    t = runs.get('pytorture')
    if t is not None:
        want.append('pytorture')
        kv = dict(re.findall(r'(\w+)=(\d+)', ' '.join(t.get('assist', []))))
        res['pytorture'] = dict(rc=t.get('rc', '?'), threads=t.get('threads', '0'),
                                rounds=t.get('rounds', '0'), answers=kv.get('answers', '0'),
                                built=kv.get('built', '0'))
        print(f"torture: rc={t.get('rc', '?')} threads={t.get('threads', '?')} "
              f"rounds={t.get('rounds', '?')} answers={kv.get('answers', '?')} "
              f"built={kv.get('built', '?')} at -F {t.get('freq', '?')} for {t.get('record_s', '?')} s")
        for line in t.get('assist', []):
            print(f'  pytorture: unwind_assist: {line}')


def split_log(path):
    """The guest's results.log: {mode: its demo-run fields, and images or
    rounds from the workload's note}, {mode: perf script text}, the notes."""
    log = guestlog.read(path)
    runs, notes = {}, []
    for line in log.lines:
        m = re.match(r'### demo-run (\w+) (.*)', line)
        if m:
            runs.setdefault(m.group(1), {}).update(guestlog.fields(m.group(2)))
        m = re.match(r'### demo-cost (\w+) rc=(\d+) pywork: \d+ rounds in ([\d.]+) s(.*)', line)
        if m:
            kv = dict(re.findall(r'(\w+)=(\d+)', m.group(4)))
            runs.setdefault('pycost', {}).setdefault(m.group(1), []).append(
                (int(m.group(2)), float(m.group(3)), int(kv.get('answers', 0)),
                 int(kv.get('handler_ns_total', 0))))
        elif line.startswith('# ') or line.startswith('### demo-start'):
            notes.append(line)
            m = re.match(r'# (\w+): imgdemo: (\d+) images in ([\d.]+) s', line)
            if m:
                runs.setdefault(m.group(1), {})['images'] = m.group(2)
            m = re.match(r'# (\w+): interp: (\d+) rounds', line)
            if m:
                runs.setdefault(m.group(1), {})['rounds'] = m.group(2)
            m = re.match(r'# (\w+): pywork: (\d+) rounds, threads (\d+) joined, '
                         r'children (\d+) ok (\d+) failed', line)
            if m:
                runs.setdefault(m.group(1), {}).update(
                    rounds=m.group(2), threads=m.group(3), children_ok=m.group(4),
                    children_failed=m.group(5))
            m = re.match(r'# (\w+): pytorture: (\d+) threads joined, (\d+) rounds', line)
            if m:
                runs.setdefault(m.group(1), {}).update(threads=m.group(2), rounds=m.group(3))
            m = re.match(r'# (\w+): unwind_assist: (.*)', line)
            if m:
                runs.setdefault(m.group(1), {}).setdefault('assist', []).append(m.group(2))
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
    # The audit rows only if the guest had the LD_AUDIT module to run them,
    # the per-file row if it had sframe-synth.
    want = [m for m, _, _ in MODES
            if not (m.startswith('audit') or m == 'file') or m in runs]
    for mode, label, opt in MODES:
        if mode not in want:
            continue
        if mode not in texts:
            print(f'demo: no perf script output for {mode} (see {log})', file=sys.stderr)
            continue
        lost = []
        samples = perfscript.parse(texts[mode], lost)
        st = perfscript.stats(samples)
        st['lost'] = sum(lost)
        n = st['samples']
        nbytes = int(runs.get(mode, {}).get('bytes', 0))
        res[mode] = dict(st, bytes=nbytes, main=pct(st['reach_main'], n),
                         bps=nbytes / n if n else 0.0)
        res[mode]['svg'] = keep_profile(outdir, mode, texts[mode], samples,
                                        f'imgdemo, {label}: {opt} ({n} samples)')
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
    print('bytes/sample: perf.data size / samples (headers included; -a: the whole machine\'s data);')
    print('lost: samples perf record could not keep up with (PERF_RECORD_LOST);')
    print('images: work the workload got done in its fixed guest time under profiling.')
    lua_rows = [m for m, _, _ in LUA_MODES if m in runs]
    if lua_rows:
        print()
        lh = (f"{'interpreter':<22} {'perf record option':<22} {'samples':>7} {'in script':>9} "
              f"{'handler':>7} {'Lua named':>9} {'Lua right':>9} {'callee below':>12} {'bytes/sample':>12} {'lost':>6} "
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
        lost = []
        samples = perfscript.parse(texts[mode], lost)
        n = len(samples)
        ns, nw, named, right, handler, wrong = lua_stats(samples)
        nbytes = int(runs[mode].get('bytes', 0))
        res[mode] = dict(named=pct(named, nw), right=pct(right, nw), wrong=wrong,
                         handler=pct(handler, ns), bps=nbytes / n if n else 0.0)
        res[mode]['svg'] = keep_profile(outdir, mode, texts[mode], samples,
                                        f'lua5.4 interp.lua, {label}: {opt} ({n} samples)')
        print(f"{label:<22} {opt:<22} {n:>7} {ns:>9} {res[mode]['handler']:>6.1f}% "
              f"{res[mode]['named']:>8.1f}% "
              f"{res[mode]['right']:>8.1f}% {wrong:>12} {res[mode]['bps']:>12.0f} {sum(lost):>6} "
              f"{runs[mode].get('rounds', '?'):>6}")
    if lua_rows:
        print()
        print('in script: samples from the first to the last that names a Lua function '
              '(not the interpreter\'s start-up and exit);')
        print('handler: of those, share taken in the module\'s signal handler (the cost of the answers);')
        print('Lua named: of the others, share with a Lua function of interp.lua in the stack;')
        print('Lua right: of the others, share whose Lua frames are each called by the next, up to the main chunk;')
        print('callee below: samples with native code below a Lua function (as its caller) that is not the')
        print('  interpreter\'s start: a callee at the wrong depth;')
        print('rounds: work the script got done in its fixed guest time under profiling.')
    python_rows(runs, texts, outdir, res, want)
    print()
    for mode, _, _ in MODES + LUA_MODES + PY_MODES:
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
    print('demo: per_file complete_stacks=%s bytes_per_sample=%s (perf record -a --call-graph '
          'fp,defer, imgdemo\'s samples, the whole machine\'s perf.data; the tables of its '
          'files given by sframe-synth serve when the kernel asked, no LD_AUDIT, no prctl)' % (
              g('file', 'main', '%.1f%%'), g('file', 'bps', '%.0f')))
    print('demo: interpreter lua_right=%s lua_callee_below=%s lua_named=%s in_handler=%s '
          'without_module_named=%s '
          'bytes_per_sample=%s (lua5.4 -l unwind_assist, --call-graph fp,defer)' % (
              g('lua', 'right', '%.1f%%'), g('lua', 'wrong', '%d'), g('lua', 'named', '%.1f%%'),
              g('lua', 'handler', '%.1f%%'),
              g('luaplain', 'named', '%.1f%%'), g('lua', 'bps', '%.0f')))
    py, plain = res.get('py'), res.get('pyplain')
    if py and 'py' in runs:
        cost = 100.0 * (1 - py['rounds'] / plain['rounds']) if plain and plain['rounds'] else 0.0
        print('demo: python py_right=%.1f%% py_bad_order=%d py_callee_below=%d py_misplaced=%d '
              'py_named=%.1f%% in_handler=%.1f%% without_ext_named=%s rounds_plain=%s rounds_ext=%d '
              'work_lost=%.1f%% children_failed=%s torture_rc=%s torture_threads=%s '
              'torture_built=%s' % (
                  py['right_pct'], py['bad_order'], py['callee_below'], py['misplaced'],
                  py['named_pct'],
                  py['handler_pct'], g('pyplain', 'named_pct', '%.1f%%'),
                  g('pyplain', 'rounds', '%d'), py['rounds'], cost,
                  runs['py'].get('children_failed', '?'),
                  res.get('pytorture', {}).get('rc', 'n/a'),
                  res.get('pytorture', {}).get('threads', 'n/a'),
                  res.get('pytorture', {}).get('built', 'n/a')))
    if 'pycost' in res:
        print('demo: python_cost work_lost=%.1f%% us_per_answer=%.1f us_in_handler=%.1f answers=%.0f' % (
            res['pycost']['lost'], res['pycost']['per_answer'], res['pycost']['handler'],
            res['pycost']['answers']))
    return 0 if all(m in res for m in want) else 1


if __name__ == '__main__':
    sys.exit(main())
