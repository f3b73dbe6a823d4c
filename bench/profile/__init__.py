# SPDX-License-Identifier: GPL-2.0
"""make profile's host side (bench.profile.report)."""
