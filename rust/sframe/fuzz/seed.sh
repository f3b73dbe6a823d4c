#!/bin/bash
# Write the .sframe sections of the oracle corpus to fuzz/seeds/.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -q --test oracle write_fuzz_seeds -- --ignored
ls fuzz/seeds | wc -l
