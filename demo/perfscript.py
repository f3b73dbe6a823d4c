# SPDX-License-Identifier: GPL-2.0
"""Read `perf script` text (with callchains) and check user stacks in it.

Used by demo/report.py (the `make demo` table and flame graphs), by
bench/report.py and by demo/check-perf.sh (an assertion for the test
harness).  Python 3 stdlib only; imported as demo.perfscript (see
harness/__init__.py), run as `python3 -m demo.perfscript check ...`.

A sample is a header line (comm, tid, time, event) followed by its callchain,
one frame a line, leaf first:  "\t    7f01c0de1234 convolve_pixel (/selftests/libfilter.so)".
"""
import os
import re
import sys

from harness import guestlog

# The DSO is the last parenthesized field: a name may hold parentheses too.
FRAME = re.compile(r'^\s+([0-9a-fA-F]+)\s+(.*?)(?:\s+\(([^()]*)\))?\s*$')

# The demo workload's call graph: each function and its caller.
WORKLOAD_CALLER = {
    'convolve_pixel': 'filter_row',
    'filter_row': 'filter_pass',
    'filter_pass': 'filter_image',
    'filter_image': 'apply_filters',
    'apply_filters': 'process_image',
    'histogram': 'compute_stats',
    'compute_stats': 'process_image',
    'process_image': 'run_jobs',
    'run_jobs': 'main',
}
# The hot path, leaf first: most samples must show it whole, in this order.
HOT_CHAIN = ['convolve_pixel', 'filter_row', 'filter_pass', 'filter_image',
             'apply_filters', 'process_image', 'run_jobs', 'main']


LOST = re.compile(r'PERF_RECORD_LOST\b.*\blost (\d+)')


def parse(text, lost=None):
    """Samples of a perf script text: a list of (header, [(sym, dso), ...])
    with frames leaf first.  Symbols perf could not resolve are '[unknown]'.
    Records other than samples (--show-lost-events, --show-mmap-events...)
    are skipped; if @lost is a list, the sample counts of PERF_RECORD_LOST
    records are appended to it."""
    samples = []
    cur = None
    for line in text.splitlines():
        if not line.strip():
            cur = None
            continue
        if line[0] in ' \t':
            m = FRAME.match(line)
            if m and cur is not None:
                sym = m.group(2) or '[unknown]'
                # perf may append +0xoff with -F symoff; drop it.
                sym = re.sub(r'\+0x[0-9a-f]+$', '', sym)
                cur[1].append((sym, m.group(3) or '[unknown]'))
            continue
        if 'PERF_RECORD_' in line:
            m = LOST.search(line)
            if m and lost is not None:
                lost.append(int(m.group(1)))
            cur = None
            continue
        cur = (line.strip(), [])
        samples.append(cur)
    return samples


def syms(sample):
    return [s for s, _ in sample[1]]


def reaches_main(sample):
    return 'main' in syms(sample)


def exact(sample, caller=WORKLOAD_CALLER):
    """None if the leaf is not a workload function; else True if every frame
    from the leaf up is the right caller, all the way to main."""
    names = syms(sample)
    if not names or names[0] not in caller:
        return None
    for i, name in enumerate(names):
        if name == 'main':
            return True
        if i + 1 >= len(names) or names[i + 1] != caller.get(name):
            return False
    return False


def has_chain(sample, chain=HOT_CHAIN):
    """True if the frames @chain appear consecutively, in order (leaf first)."""
    names = syms(sample)
    n = len(chain)
    return any(names[i:i + n] == chain for i in range(len(names) - n + 1))


def stats(samples):
    n = len(samples)
    in_wl = [s for s in samples if exact(s) is not None]
    return {
        'samples': n,
        'reach_main': sum(map(reaches_main, samples)),
        'workload_leaf': len(in_wl),
        'exact': sum(1 for s in in_wl if exact(s)),
        'hot_chain': sum(map(has_chain, samples)),
        'depth_sum': sum(len(s[1]) for s in samples),
    }


# Frames a task gave itself (user-assisted unwinding), named by its perf map.
PERF_MAP = re.compile(r'/tmp/perf-\d+\.map$')


def interpreted(sample, interp):
    """The interpreted frames of @sample, leaf first, and whether a native
    frame is found below the outermost of them that the interpreter's start
    does not explain: native code an interpreted function called, put below
    it as its caller. Below the outermost interpreted frame there may be
    only the interpreter's binary @interp (a DSO basename), then libc's start
    of the process or the thread, then the binary's _start."""
    frames = sample[1]
    at = [i for i, (_, dso) in enumerate(frames) if PERF_MAP.search(dso)]
    if not at:
        return [], False
    below = ''.join('B' if os.path.basename(dso) == interp else
                    'L' if os.path.basename(dso).startswith('libc.so') else 'X'
                    for _, dso in frames[at[-1] + 1:])
    return [frames[i][0] for i in at], not re.fullmatch('B*L*B?', below)


def interp_right(names, callers, root):
    """Whether interpreted frames @names, leaf first, are each called by the
    next (@callers: a function's possible callers), up to @root."""
    return bool(names) and names[-1] == root and all(
        names[i + 1] in callers.get(names[i], ()) for i in range(len(names) - 1))


def folded(samples, comm_root=False):
    """Collapsed stacks ("root;...;leaf count" lines) for flame graphs."""
    counts = {}
    for hdr, frames in samples:
        names = [s for s, _ in reversed(frames)] or ['[no stack]']
        if comm_root:
            names.insert(0, hdr.split()[0])
        key = ';'.join(n.replace(';', ':') for n in names)
        counts[key] = counts.get(key, 0) + 1
    return ''.join(f'{k} {v}\n' for k, v in sorted(counts.items()))


def check(text, chain=HOT_CHAIN, min_share=0.5, min_exact=0.95, min_samples=50):
    """Assert that @chain appears, in order, in at least @min_share of the
    samples of @text whose leaf is @chain's first function (how many samples
    land there depends on the emulator's timing, not on the unwinder), and
    that at least @min_exact of the samples whose leaf is a workload function
    have exactly the right callers up to main. Returns (ok, message)."""
    samples = parse(text)
    st = stats(samples)
    n, wl = st['samples'], st['workload_leaf']
    leaf = sum(1 for s in samples if syms(s)[:1] == chain[:1])
    hot = sum(1 for s in samples if syms(s)[:1] == chain[:1] and has_chain(s, chain))
    share = hot / leaf if leaf else 0.0
    ex = st['exact'] / wl if wl else 0.0
    msg = (f"samples {n}, {leaf} in {chain[0]} with the full chain "
           f"{'>'.join(chain)} in {hot} ({100 * share:.1f}%), workload-leaf "
           f"samples {wl} with exact callers to main {st['exact']} "
           f"({100 * ex:.1f}%), reach main {st['reach_main']}")
    ok = leaf >= min_samples and share >= min_share and ex >= min_exact
    return ok, msg


def from_results_log(text, mode='sframe'):
    """The perf script text of run @mode out of a demo guest's results.log,
    or None if it has none."""
    log = guestlog.parse(text.splitlines())
    if ('demo-script', mode) not in log.blocks:
        return None
    return guestlog.decode(log.blocks['demo-script', mode]).decode(errors='replace')


def main(argv):
    """perfscript.py check FILE|- [MIN_SHARE [MIN_EXACT]]: see check-perf.sh.

    PERF_RUN (environment) picks the run of a demo results.log: sframe
    (default) or nmi (plain --call-graph fp, SFrame at sample time)."""
    if len(argv) < 3 or argv[1] != 'check':
        print(main.__doc__, file=sys.stderr)
        return 2
    path = argv[2]
    min_share = float(argv[3]) if len(argv) > 3 else 0.5
    min_exact = float(argv[4]) if len(argv) > 4 else 0.95
    if path == '-':
        text = sys.stdin.read()
    else:
        with open(path, errors='replace') as f:
            text = f.read()
    run = os.environ.get('PERF_RUN', 'sframe')
    script = from_results_log(text, run)
    if script is not None:
        text = script
    ok, msg = check(text, min_share=min_share, min_exact=min_exact)
    print(('ok - ' if ok else 'not ok - ') + 'perf script stacks: ' + msg)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
