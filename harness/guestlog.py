# SPDX-License-Identifier: GPL-2.0
"""The guest's results.log as the experiments write it (make demo, make
oracle, make bench: their guest scripts print to ttyS1, which the host
keeps in results.log).

Two kinds of lines:

  ### TAG NAME begin     a block: the lines up to its end marker are kept
  ...                    as they are; perf script's output and the like
  ### TAG NAME end       are gzip + base64 (harness/guest-lib.sh's
                         guest_block writes them, decode() reads them)

and every other line, kept in order: summary lines ("### demo-run MODE
k=v ...", "bench: KEY k=v ..."), notes ("# ..."). A marker may follow a
line the guest left without its newline (perf's output): it is found
anywhere in a line, at the end.

Imported as harness.guestlog, with the repository's top directory on the
module path (python3 -m from there; harness/experiment.sh's run_py).
"""
import base64
import gzip
import re
import sys
import zlib

MARKER = re.compile(r'### ([\w-]+) (\S+) (begin|end)$')
FIELD = re.compile(r'(\w+)=(\S*)')


class Log:
    """@lines: the lines outside blocks, in order; @blocks: {(tag, name):
    [lines]}, for every block begun (one without its end marker runs to
    the end of the log)."""

    def __init__(self, lines=(), blocks=None):
        self.lines = list(lines)
        self.blocks = dict(blocks or {})

    def names(self, tag):
        """The names of the blocks of @tag, in the order they begin."""
        return [n for t, n in self.blocks if t == tag]

    def texts(self, tag, who, what='perf script output'):
        """{name: decoded text} of the gzip + base64 blocks of @tag; one
        that does not decode is left out and reported on stderr as
        "@who: NAME: cannot decode @what: ERROR"."""
        out = {}
        for name in self.names(tag):
            try:
                out[name] = decode(self.blocks[tag, name]).decode(errors='replace')
            except (ValueError, OSError, EOFError, zlib.error) as e:
                print(f'{who}: {name}: cannot decode {what}: {e}', file=sys.stderr)
        return out


def parse(lines):
    """A Log of @lines (strings, with or without their line ends)."""
    log, cur = Log(), None
    for line in lines:
        line = line.rstrip('\r\n')
        m = MARKER.search(line)
        if m:
            key = (m.group(1), m.group(2))
            if m.group(3) == 'begin':
                cur = key
                log.blocks[key] = []
            elif cur == key:
                cur = None
            continue
        if cur:
            log.blocks[cur].append(line)
        else:
            log.lines.append(line)
    return log


def read(path):
    """The Log of the file @path (undecodable bytes replaced)."""
    with open(path, errors='replace') as f:
        return parse(f)


def decode(lines):
    """The bytes of a gzip + base64 block, given its lines."""
    return gzip.decompress(base64.b64decode(''.join(l.strip() for l in lines)))


def fields(text):
    """{key: value} of the "key=value" words of @text (values as strings)."""
    return dict(FIELD.findall(text))
