#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Make the PT_GNU_SFRAME program header of an x86-64 ELF file PT_NULL.

Usage: hide_sframe.py FILE

The header keeps its offset, address and sizes, where unwind_bench finds
its section; the kernel, which reads only PT_GNU_SFRAME, then does not
describe the file by itself, and the bench registers what it measures.
"""
import struct
import sys

PT_NULL, PT_GNU_SFRAME = 0, 0x6474E554


def main():
    path = sys.argv[1]
    with open(path, "r+b") as f:
        ehdr = f.read(64)
        if ehdr[:5] != b"\x7fELF\x02":
            sys.exit(f"{path}: not an ELF64 file")
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        hidden = 0
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, = struct.unpack("<I", f.read(4))
            if p_type == PT_GNU_SFRAME:
                f.seek(phoff + i * phentsize)
                f.write(struct.pack("<I", PT_NULL))
                hidden += 1
        if hidden != 1:
            sys.exit(f"{path}: {hidden} PT_GNU_SFRAME headers, not one")


if __name__ == "__main__":
    main()
