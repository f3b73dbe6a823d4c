#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fail if an option the fragment asks for did not make it into .config
# (a missing dependency silently drops it otherwise).
#
# Usage: check-config.sh DOTCONFIG FRAGMENT
set -euo pipefail
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=n)
		opt=${line%%=*}
		if grep -q "^$opt=[ym]" "$1"; then
			echo "config: $opt is set, the fragment wants it off" >&2
			bad=1
		fi
		;;
	CONFIG_*=*)
		if ! grep -qxF "$line" "$1"; then
			echo "config: $line requested but .config has: $(grep "^${line%%=*}=\|# ${line%%=*} is not set" "$1" || echo nothing)" >&2
			bad=1
		fi
		;;
	esac
done <"$2"
exit $bad
