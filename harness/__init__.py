# SPDX-License-Identifier: GPL-2.0
"""The test harness's Python modules (harness.results, harness.guestlog).

The repository's top directory is the module path of all its Python:
run a module as `python3 -m harness.results` from there, or with
PYTHONPATH set to it (harness/experiment.sh's run_py does).
"""
