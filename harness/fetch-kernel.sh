#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fetch Debian's linux-source-7.2 (trixie-backports first, then sid) and
# unpack it into $1 as a git repository whose tag "pristine" is the
# untouched tree. Prints and records the exact package version used.
#
# Usage: fetch-kernel.sh SRC_DIR
set -euo pipefail

SRC=$1
PKG=linux-source-7.2
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if git -C "$SRC" rev-parse -q --verify pristine >/dev/null 2>&1; then
	echo "fetch-kernel: using $(cat "$SRC/.debian-version") in $SRC"
	exit 0
fi

# Debian suites that carry 7.2, pinned low so that nothing else is upgraded
# from them.
LIST=/etc/apt/sources.list.d/unwind-user-kernel.sources
if [ ! -f "$LIST" ]; then
	$SUDO tee "$LIST" >/dev/null <<EOT
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie-backports sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
	$SUDO tee /etc/apt/preferences.d/unwind-user-kernel >/dev/null <<EOT
Package: *
Pin: release n=trixie-backports
Pin-Priority: 50

Package: *
Pin: release n=sid
Pin-Priority: 40
EOT
	$SUDO apt-get update -q
fi

DL=$(mktemp -d)
chmod 755 "$DL"
trap 'rm -rf "$DL"' EXIT
version=
for suite in trixie-backports sid; do
	v=$(apt-cache madison "$PKG" 2>/dev/null | awk -v s="$suite" '$0 ~ s"/main" {print $3; exit}')
	[ -n "$v" ] || continue
	if (cd "$DL" && apt-get download -q "$PKG=$v" >/dev/null); then
		version=$v
		echo "fetch-kernel: $PKG $version from $suite"
		break
	fi
done
if [ -z "$version" ]; then
	echo "fetch-kernel: ERROR: $PKG is not available from trixie-backports or sid;" >&2
	echo "fetch-kernel: check network access to deb.debian.org and $LIST" >&2
	exit 1
fi

dpkg-deb -x "$DL"/${PKG}_*.deb "$DL/x"
rm -rf "$SRC.tmp"
mkdir -p "$SRC.tmp"
tar -xJf "$DL/x/usr/src/$PKG.tar.xz" -C "$SRC.tmp" --strip-components=1
echo "$PKG $version" >"$SRC.tmp/.debian-version"
(
	cd "$SRC.tmp"
	git init -q
	git config user.name "unwind_user build"
	git config user.email "build@unwind-user.invalid"
	git config core.autocrlf false
	git add -A -f .
	git commit -q -m "Linux $PKG $version (Debian, pristine)"
	git tag pristine
)
rm -rf "$SRC"
mv "$SRC.tmp" "$SRC"
echo "fetch-kernel: unpacked $PKG $version into $SRC"
