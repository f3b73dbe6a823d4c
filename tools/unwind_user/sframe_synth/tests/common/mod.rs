// SPDX-License-Identifier: GPL-2.0

//! What the tests of the `sframe-synth` command share: running it, its
//! output, scratch directories, and skipping for want of a host file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `sframe-synth` run with `args`, to its end.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sframe-synth"))
        .args(args)
        .output()
        .unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh directory for one test, `{prefix}-{pid}-{name}` in the
/// temporary directory.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Whether `path` exists; if not, the test says it is skipped.
pub fn have(path: &str) -> bool {
    let ok = Path::new(path).exists();
    if !ok {
        println!("note: {path} does not exist, skipped");
    }
    ok
}
