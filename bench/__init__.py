# SPDX-License-Identifier: GPL-2.0
"""make bench's host side (bench.report, bench.noalloc)."""
