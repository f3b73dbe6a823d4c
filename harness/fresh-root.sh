#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Prove README's two commands on a machine that has nothing installed by
# hand: a new Debian 12 root (debootstrap bookworm) with what the project's
# machines ship (gcc, make, git, python3, the rustup toolchain), then
# `git clone` of this repository's HEAD and `make check` inside it, as
# root, with its own empty KBUILD_DIR. Nothing of the host's build cache,
# cargo installs or apt packages is visible inside.
#
# Usage: fresh-root.sh REPO WORKDIR
#   FRESH_TARGETS (environment): the make targets run in the clone, in
#   order (default: check). "check vng-deps" also proves that make vng's
#   install step (virtme-ng from PyPI into a venv) works on a new machine.
#   WORKDIR/base  the debootstrap result, kept and reused (read-only use)
#   WORKDIR/root  a fresh copy of it for this run, removed at the start
#   WORKDIR/make-check.log  the run's output; its last lines are printed
set -euo pipefail
REPO=$1 WORK=$2
BASE=$WORK/base ROOT=$WORK/root LOG=$WORK/make-check.log
mkdir -p "$WORK"

# What a machine of the project's kind ships before anyone installs
# anything (see /work/.library/env: gcc, make, git, python3 with pip,
# ca-certificates, curl, sudo; the rustup toolchain is copied below).
IMAGE_PKGS=ca-certificates,curl,gcc,g++,make,git,python3,python3-pip,sudo,xz-utils

if [ ! -f "$BASE/.complete" ]; then
	rm -rf "$BASE"
	echo "fresh-root: debootstrap bookworm into $BASE"
	debootstrap --variant=minbase --include="$IMAGE_PKGS" bookworm "$BASE" \
		http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 ||
		{ tail -20 "$WORK/debootstrap.log"; exit 1; }
	touch "$BASE/.complete"
fi

cleanup() {
	for m in dev/pts dev proc sys; do
		umount -l "$ROOT/$m" 2>/dev/null || true
	done
}
trap cleanup EXIT
cleanup
rm -rf "$ROOT"
cp -a "$BASE" "$ROOT"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# The workplace's own settings, which every new machine of this kind has
# and the project does not make: apt's configuration (here the archive is
# a frozen mirror whose Release files are past their Valid-Until date) and
# the network's certificate authorities (a TLS-inspecting egress proxy).
cp /etc/apt/apt.conf.d/* "$ROOT/etc/apt/apt.conf.d/"
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
	cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
	chroot "$ROOT" update-ca-certificates >/dev/null 2>&1
fi
# The same apt sources as a machine of the project's kind (bookworm and its
# updates and security suites).
cat >"$ROOT/etc/apt/sources.list" <<EOT
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOT

# The machine's rustup toolchain, as the image has it: rustup and the
# toolchains, without anything `cargo install` added later (bindgen) and
# without the crate cache.
mkdir -p "$ROOT/root/.cargo/bin"
cp -a "$HOME/.rustup" "$ROOT/root/.rustup"
cp -a "$HOME/.cargo/env" "$ROOT/root/.cargo/"
for t in cargo cargo-clippy cargo-fmt cargo-miri clippy-driver rls rust-analyzer \
	rust-gdb rust-gdbgui rust-lldb rustc rustdoc rustfmt rustup; do
	[ -e "$HOME/.cargo/bin/$t" ] && cp -a "$HOME/.cargo/bin/$t" "$ROOT/root/.cargo/bin/"
done

git clone -q "$REPO" "$ROOT/root/unwind-user"
echo "fresh-root: $(git -C "$REPO" log -1 --format='%h %s')"

mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"

echo "fresh-root: git clone + make ${FRESH_TARGETS:-check} in $ROOT (log: $LOG)"
start=$(date +%s)
rc=0
chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb \
	PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	FRESH_TARGETS="${FRESH_TARGETS:-check}" \
	/bin/bash -c 'cd /root/unwind-user && for t in $FRESH_TARGETS; do make $t || exit; done' \
	>"$LOG" 2>&1 || rc=$?
secs=$(($(date +%s) - start))
tail -25 "$LOG"
echo "fresh-root: make ${FRESH_TARGETS:-check} exited $rc after $((secs / 60)) min $((secs % 60)) s"
exit $rc
