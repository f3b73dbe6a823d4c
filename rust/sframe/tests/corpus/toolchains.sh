#!/bin/bash
# Fetch the SFrame-capable toolchains used to (re)build the oracle corpus,
# without installing anything system-wide:
#   - trixie binutils 2.44  (SFrame V2)   -> $TC/trixie/bin/{as,ld,objdump,readelf}
#   - sid binutils 2.47.x   (SFrame V3)   -> $TC/sid/bin/{as,ld,objdump,readelf}
#   - the same for aarch64 (trixie and sid): $TC/<suite>/aarch64/{as,ld,objdump}
#   - clang-22 / lld-22 / llvm-22 come from bookworm-security (apt install).
# Packages are fetched with `apt-get download` and unpacked with `dpkg-deb -x`
# into one root per suite; each tool runs with that root's own loader and libc.
#
# Usage: toolchains.sh            (prints the TC directory)
set -euo pipefail

TC=${UNWIND_USER_TOOLCHAINS:-$HOME/.cache/unwind-user/toolchains}
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# apt sources for trixie and sid, pinned so low that nothing is ever upgraded
# from them; only `apt-get download` uses them.
add_suite() {
	local suite=$1 prio=$2 name=/etc/apt/sources.list.d/unwind-user-$1.sources
	if ! apt-cache policy | grep -q " $suite/main amd64"; then
		$SUDO tee "$name" >/dev/null <<EOT
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
		$SUDO tee /etc/apt/preferences.d/unwind-user-$suite >/dev/null <<EOT
Package: *
Pin: release n=$suite
Pin-Priority: 30
EOT
		NEED_UPDATE=1
	fi
}
NEED_UPDATE=
add_suite trixie 30
add_suite sid 30
[ -z "$NEED_UPDATE" ] || $SUDO apt-get update -q >/dev/null

# clang-22 with SFrame V2 support (bookworm-security carries LLVM 22).
if ! command -v clang-22 >/dev/null; then
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang-22 lld-22 llvm-22 >/dev/null
fi

common_pkgs="binutils-common libbinutils libctf-nobfd0 libctf0 libjansson4 libzstd1 zlib1g libc6 libgcc-s1 libstdc++6"

fetch_suite() {
	local suite=$1 sframe_pkg=$2 root=$TC/$1
	if [ -x "$root/bin/objcopy" ] && [ -x "$root/aarch64/objcopy" ]; then
		return
	fi
	local dl
	dl=$(mktemp -d)
	chmod 755 "$dl" # let apt's sandbox user write there
	local pkgs="binutils-x86-64-linux-gnu binutils-aarch64-linux-gnu $sframe_pkg $common_pkgs"
	(
		cd "$dl"
		for p in $pkgs; do
			v=$(apt-cache madison "$p" | awk -v s="$suite/main" '$0 ~ s {print $3; exit}')
			[ -n "$v" ] || { echo "toolchains: $p not in $suite" >&2; exit 1; }
			apt-get download -q "$p=$v" >/dev/null
		done
	)
	rm -rf "$root"
	mkdir -p "$root/root" "$root/bin" "$root/aarch64"
	for d in "$dl"/*.deb; do dpkg-deb -x "$d" "$root/root"; done
	rm -rf "$dl"
	local lib=$root/root/usr/lib/x86_64-linux-gnu
	for arch in x86_64 aarch64; do
		local out=$root/bin
		[ $arch = x86_64 ] || out=$root/aarch64
		for t in as ld objdump readelf objcopy; do
			cat >"$out/$t" <<EOT
#!/bin/sh
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$root/root/usr/bin/$arch-linux-gnu-$t" "\$@"
EOT
			chmod +x "$out/$t"
		done
	done
}
fetch_suite trixie libsframe1
fetch_suite sid "libsframe3 libsframe-dev"
echo "$TC"
