#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host side of `make bench-arm64`: make bench's step table (bench/report.py's
measure_step() and render_step()) of the arm64 guest's results.log, the
step figures beside x86's from make bench's table (bench/RESULTS.md), and
the summary lines:

    bench-arm64: sframe_fp_step_ratio warm=X cold=Y
    bench-arm64: warm step sframe/fp shallow/deep arm64 A/B, x86 C/D

Usage: python3 -m bench.report_arm64 --results LOG --build DIR --accel FILE
                                     --x86 RESULTS.md [--seconds N] [--config FILE]
Exit status 1 if the log lacks a step figure or the guest reported an error.
"""
import argparse
import re
import sys
import types

from bench import report

# x86's rows of make bench's table, e.g.
# "| warm, shallow | 10 | 204 | 149 | **1.37** (1.37) | yes |"
ROW = re.compile(r'\| ((?:warm|cold), (?:shallow|deep)) \| (\d+) \| (\d+)(?: \(\d+\))? \| '
                 r'(\d+)(?: \(\d+\))? \| \*\*([\d.]+)\*\*')


def x86_rows(path):
    """{'warm, shallow': (frames, sframe ns, fp ns, ratio)} of make bench's table."""
    rows = {}
    try:
        with open(path) as f:
            for line in f:
                m = ROW.match(line)
                if m:
                    rows[m.group(1)] = m.group(2, 3, 4, 5)
    except OSError:
        pass
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--results', required=True)
    ap.add_argument('--build', required=True)
    ap.add_argument('--accel', required=True)
    ap.add_argument('--x86', required=True)
    ap.add_argument('--seconds', type=int, default=0)
    ap.add_argument('--config', default='')
    a = ap.parse_args()

    recs, _, _, _ = report.parse(a.results)
    rec = report.Records(recs)
    guest, cfg = rec.one('guest'), rec.one('config')
    fig = types.SimpleNamespace(problems=rec.problems, med_ratio=rec.med_ratio, cfg=cfg,
                                shallow=cfg.get('shallow', 4), deep=cfg.get('deep', 200))
    report.measure_step(rec, fig, a.build)
    env = report.environment(types.SimpleNamespace(accel=a.accel, config=a.config,
                                                   kernel='', seconds=a.seconds))
    o = print
    o('# `make bench-arm64` results')
    o('')
    o(f'guest kernel {guest.get("kernel", "?")}, {guest.get("nproc", "?")} vCPUs; '
      f'debug options on: {", ".join(env["debug"]) or "none found"}; optimized for {env["opt"]}; '
      f'emulation {env["accel"]} (qemu-system-aarch64 -M virt -cpu max); run time {a.seconds} s.')
    if env['accel'] == 'tcg-icount':
        o('Every "ns" below is a count of guest instructions (-icount shift=0).')
    o('')
    report.render_step(fig, None, env, o)

    x86 = x86_rows(a.x86)
    o('## The step beside x86 (make bench\'s table, bench/RESULTS.md)')
    o('')
    o('| stack | arm64 sframe | arm64 fp | arm64 sframe/fp | x86 sframe | x86 fp | x86 sframe/fp |')
    o('|---|---:|---:|---:|---:|---:|---:|')
    ratio = {}
    for what in ('warm', 'cold'):
        for d, name in ((fig.shallow, 'shallow'), (fig.deep, 'deep')):
            if what == 'warm':
                s, f = fig.W['step', d, 'sframe'][0], fig.W['step', d, 'fp'][0]
            else:
                cs, cf = fig.C.get(('cold', d, 'sframe')), fig.C.get(('cold', d, 'fp'))
                s = cs['mean_ns'] / cs['frames'] if cs else None
                f = cf['mean_ns'] / cf['frames'] if cf else None
            ratio[what, name] = fig.ratio.get((what, d))
            xf = x86.get(f'{what}, {name}', ('', 'n/a', 'n/a', 'n/a'))
            o(f'| {what}, {name} | {report.fmt(s, 0)} | {report.fmt(f, 0)} | '
              f'**{report.fmt(ratio[what, name])}** | {xf[1]} | {xf[2]} | {xf[3]} |')
    o('')
    for p in fig.problems:
        o(f'- problem: {p}')
    xw = [x86.get(f'warm, {n}', ('',) * 4)[3] or 'n/a' for n in ('shallow', 'deep')]
    print(f'bench-arm64: sframe_fp_step_ratio warm={report.fmt(ratio["warm", "deep"])} '
          f'cold={report.fmt(fig.ratio.get(("cold_median", fig.deep)))}')
    print(f'bench-arm64: warm step sframe/fp shallow/deep arm64 '
          f'{report.fmt(ratio["warm", "shallow"])}/{report.fmt(ratio["warm", "deep"])}, '
          f'x86 {xw[0]}/{xw[1]}')
    return 1 if fig.problems else 0


if __name__ == '__main__':
    sys.exit(main())
