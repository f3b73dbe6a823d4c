#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Static check for `make bench`: is any memory allocator reachable from the
user unwind path of this vmlinux?

Follows the direct calls and tail jumps (objdump -d) from the roots below,
function by function, through C and Rust code alike, and reports every
allocator function reached with the call path to it. It does not descend
into the functions in STOP (lockdep, the might_fault() checks, printk,
panics, the scheduler behind preemption points), which are no part of an
unwind; they are listed. Indirect calls cannot be followed: the functions that make
them are listed.

Usage: noalloc.py VMLINUX   -> prints a report; the last line is
  "noalloc: ok roots=... functions=N allocators=0 indirect=K"  or
  "noalloc: FAIL ... allocators=M" (with the paths above it).
"""
import bisect
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

# The user unwind: unwind_user() (what deferred unwinding calls) runs
# unwind_user_types(), whose SFrame step is unwind_user_sframe_next().
ROOTS = ['unwind_user', 'unwind_user_types', 'unwind_user_sframe_next']

ALLOC = re.compile(
    r'^_*(rust_helper_)?(kmalloc|kmem_cache_alloc|krealloc|kvmalloc|kvrealloc|'
    r'vmalloc(?!_to_page|_to_pfn|_dump|_addr)|vrealloc|kzalloc|kcalloc|'
    r'alloc_pages|folio_alloc|get_free_pages|get_zeroed_page|pcpu_alloc|'
    r'alloc_percpu)'
    # Rust: kernel::alloc::allocator::{Kmalloc,Vmalloc,KVmalloc} as Allocator
    r'|9Allocator(7realloc|5alloc)')
# Not part of an unwind: debugging checks, error reports, panics, and the
# scheduler (a preemption point may switch tasks; whatever the next task
# does is not the unwinder's doing; waking a task, the writer that waits
# for a VMA lock the deferred walk held, say, may move the wakee off an
# offline CPU and free its old CPU mask). And the two places a walk in task
# context allocates by design, never at NMI or IRQ time (the walk driver
# checks `state->nofault` before either): attaching the file tables of what the
# address space maps (file_table::attach_mapped, which builds a table the
# first time a file is met) and creating the address space's registry
# (file_table::registry_for_walk).
STOP = re.compile(
    r'^(lock_acquire|lock_release|lockdep_|lock_is_held|debug_lockdep_rcu|'
    r'rcu_read_lock_held|rcu_lockdep_|__might_sleep|__might_fault|'
    r'__might_resched|_printk|vprintk|printk|__warn_printk|warn_slowpath|'
    r'__warn|report_bug|panic|__stack_chk_fail|__ubsan_handle|dump_stack|'
    r'__list_(add|del)_valid_or_report|preempt_schedule|__schedule|schedule$|'
    r'_?_cond_resched|try_to_wake_up)'
    r'|call_printk|9panicking|rust_panic|rust_begin_unwind|panic_fmt'
    r'|10file_table(13attach_mapped|17registry_for_walk)')
CALL = re.compile(r'\s(call|j[a-z]+)\s+([0-9a-f]+) <')
INDIRECT = re.compile(r'\s(call|jmp)\s+\*|__x86_indirect_thunk')


def symbols(vmlinux):
    out = subprocess.run(['nm', '-S', '--defined-only', vmlinux],
                         capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'tTwW':
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    syms.sort()
    return syms


def disassemble(vmlinux, start, size):
    return subprocess.run(
        ['objdump', '-d', '--no-show-raw-insn', f'--start-address={start:#x}',
         f'--stop-address={start + size:#x}', vmlinux],
        capture_output=True, text=True, check=True).stdout


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    vmlinux = sys.argv[1]
    syms = symbols(vmlinux)
    starts = [s[0] for s in syms]
    by_name = {}
    for s in syms:
        by_name.setdefault(s[2], s)

    def func_at(addr):
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and syms[i][0] <= addr < syms[i][0] + max(syms[i][1], 1):
            return syms[i]
        return None

    roots = [by_name[r] for r in ROOTS if r in by_name]
    missing = [r for r in ROOTS if r not in by_name]
    parent = {r: None for r in roots}
    seen = set(roots)
    frontier = list(roots)
    stopped, allocs, indirect = {}, {}, set()
    with ThreadPoolExecutor(max_workers=4) as pool:
        while frontier:
            texts = pool.map(lambda f: disassemble(vmlinux, f[0], f[1]), frontier)
            nxt = []
            for f, text in zip(frontier, texts):
                for line in text.splitlines():
                    if INDIRECT.search(line):
                        indirect.add(f[2])
                    m = CALL.search(line)
                    if not m:
                        continue
                    g = func_at(int(m.group(2), 16))
                    if g is None or g == f or g in seen:
                        continue
                    seen.add(g)
                    parent[g] = f
                    if ALLOC.search(g[2]):
                        allocs[g] = f
                    elif STOP.search(g[2]):
                        stopped[g[2]] = f[2]
                    else:
                        nxt.append(g)
            frontier = nxt

    def path(g):
        p = []
        while g is not None:
            p.append(g[2])
            g = parent[g]
        return ' <- '.join(p)

    print(f'noalloc: {vmlinux}: {len(seen) - len(stopped) - len(allocs)} functions '
          f'reachable from {", ".join(r[2] for r in roots)} by direct calls')
    if missing:
        print(f'noalloc: roots not in the symbol table: {", ".join(missing)}')
    print(f'noalloc: reached: {", ".join(sorted(g[2] for g in seen if g[2] not in stopped and g not in allocs))}')
    print(f'noalloc: not followed (debug checks, error reports, scheduler): {", ".join(sorted(stopped))}')
    print(f'noalloc: functions with indirect calls (not followed): '
          f'{", ".join(sorted(indirect)) or "none"}')
    for g in allocs:
        print(f'noalloc: ALLOCATOR {path(g)}')
    status = 'ok' if not allocs and not missing else 'FAIL'
    print(f'noalloc: {status} functions={len(seen) - len(stopped) - len(allocs)} '
          f'allocators={len(allocs)} indirect={len(indirect)} stopped={len(stopped)}')
    return 0 if status == 'ok' else 1


if __name__ == '__main__':
    sys.exit(main())
