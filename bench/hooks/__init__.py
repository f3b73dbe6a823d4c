# SPDX-License-Identifier: GPL-2.0
"""make bench-hooks' host side (bench.hooks.report)."""
