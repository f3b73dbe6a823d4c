# SPDX-License-Identifier: GPL-2.0
"""make demo's and make oracle's host side (demo.report, demo.oracle) and
the perf script reader they share with make bench (demo.perfscript)."""
