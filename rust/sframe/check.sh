#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Everything CI should run for rust/sframe (offline, rustup toolchain only),
# plus the kernel-style build when Debian's rustc is installed.
set -euo pipefail
cd "$(dirname "$0")"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test
cargo doc --no-deps
RUSTC_KERNEL=${RUSTC_KERNEL:-/usr/bin/rustc}
if [ -x "$RUSTC_KERNEL" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	# As the kernel builds it: the crate root alone, no cargo, no features,
	# with the kernel's warnings (and overflow checks) made errors.
	"$RUSTC_KERNEL" --edition=2021 --crate-type=rlib --crate-name=sframe \
		-Dunsafe_op_in_unsafe_fn -Dmissing_docs -Dunreachable_pub \
		-Drust_2018_idioms -Dnon_ascii_idents -Dmissing_debug_implementations \
		-Dwarnings -Cdebug-assertions=on -Coverflow-checks=on \
		--emit=metadata -o "$out/sframe.rmeta" src/lib.rs
	# Optimized and instantiated with a slice reader, the decoder has no
	# panic path left at all (no core::panicking symbol is referenced).
	"$RUSTC_KERNEL" --edition=2021 --crate-type=rlib --crate-name=sframe \
		-O -C panic=abort -o "$out/libsframe.rlib" src/lib.rs
	cat >"$out/mono.rs" <<'EOT'
#![no_std]
pub fn lookup(b: &[u8], len: u32, pc: u64) -> Result<sframe::Row, sframe::Error> {
    let mut s = sframe::Section::new(b, len, 0x1000)?;
    s.validate()?;
    let f = s.fde(0)?;
    let _ = s.fre(&f, 0)?;
    s.for_each_fre(&f, |_, _| {})?;
    s.find(pc)
}
EOT
	"$RUSTC_KERNEL" --edition=2021 --crate-type=rlib --crate-name=mono -O -C panic=abort \
		--extern sframe="$out/libsframe.rlib" --emit=obj -o "$out/mono.o" "$out/mono.rs"
	if nm "$out/mono.o" | grep -i panic; then
		echo "check.sh: panic symbols in the optimized decoder" >&2
		exit 1
	fi
	echo "check.sh: decoder text size: $(size "$out/mono.o" | awk 'NR==2 {print $1}') bytes"
	echo "check.sh: kernel-style build with $("$RUSTC_KERNEL" --version) OK, no panic symbols"
fi
