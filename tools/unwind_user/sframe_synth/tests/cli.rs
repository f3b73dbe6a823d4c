// SPDX-License-Identifier: GPL-2.0

//! The `sframe-synth` command: outputs, skips, usage and input errors.

use std::path::Path;
use std::process::Command;

mod common;
use common::{have, run, scratch, stderr, stdout};

const LIBZ: &str = "/lib/x86_64-linux-gnu/libz.so.1";
/// A binary built with SFrame by binutils 2.47.50 (the decoder's corpus).
const WITH_SFRAME: &str = "../../../rust/sframe/tests/corpus/bin/many.v3";
/// The prefix of this file's scratch directories.
const SCRATCH: &str = "sframe-synth";

fn files_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn help_documents_the_address_convention() {
    let o = run(&["--help"]);
    assert!(o.status.success());
    let h = stdout(&o);
    assert!(h.contains("Usage: sframe-synth [--cache DIR] [-o OUT] [--report] OBJECT..."));
    assert!(
        h.contains("as if it were located at address\n0 of the object's link-time address space")
    );
    assert!(h.contains("load bias"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["--report"][..],
        &[LIBZ][..],
        &["-o", "/tmp/x", LIBZ, LIBZ][..],
        &["--bogus", LIBZ][..],
        &["--cache"][..],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("Try 'sframe-synth --help'"), "{args:?}");
    }
}

#[test]
fn cache_and_output_files() {
    if !have(LIBZ) {
        return;
    }
    let d = scratch(SCRATCH, "cache");
    let cache = d.join("a/b");
    let out = d.join("libz.sframe");
    let o = run(&[
        "--report",
        "--cache",
        cache.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        LIBZ,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let data = std::fs::read(LIBZ).unwrap();
    let obj = sframe_synth::elf::read_elf(&data).unwrap();
    let id = obj.build_id_hex().unwrap();
    let expected = sframe_synth::synthesize(&obj).unwrap().section;
    // Named by the build ID, nothing else left behind (no temporary file).
    assert_eq!(files_in(&cache), [format!("{id}.sframe")]);
    assert_eq!(
        std::fs::read(cache.join(format!("{id}.sframe"))).unwrap(),
        expected
    );
    assert_eq!(std::fs::read(&out).unwrap(), expected);
    assert_eq!(files_in(&d), ["a", "libz.sframe"]);
    let r = stdout(&o);
    assert!(r.contains(&format!("(build ID {id})")), "{r}");
    assert!(r.contains("functions encoded"), "{r}");
    // libz's only expression is its .plt's: a PC-mask function now.
    assert!(r.contains("(1 PC-mask)"), "{r}");
    assert!(r.contains("left out: nothing"), "{r}");

    // Written again: replaced in place.
    let o = run(&["--cache", cache.to_str().unwrap(), LIBZ]);
    assert!(o.status.success());
    assert_eq!(files_in(&cache), [format!("{id}.sframe")]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn output_that_is_not_a_regular_file_is_written_into() {
    if !have(LIBZ) {
        return;
    }
    // A FIFO stands for /dev/null and /dev/stdout: renaming a temporary
    // file over it would replace it with a regular file.
    let d = scratch(SCRATCH, "fifo");
    let fifo = d.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        println!("note: mkfifo failed, skipped");
        return;
    }
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let o = run(&["-o", fifo.to_str().unwrap(), LIBZ]);
    if !o.status.success() {
        // Let the reader go before failing.
        let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        panic!("{}", stderr(&o));
    }
    // Still the FIFO (else the reader waits on the old one forever: the
    // test fails without joining it).
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(files_in(&d), ["fifo"]);
    let got = reader.join().unwrap();
    let data = std::fs::read(LIBZ).unwrap();
    let obj = sframe_synth::elf::read_elf(&data).unwrap();
    assert_eq!(got, sframe_synth::synthesize(&obj).unwrap().section);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn objects_with_sframe_are_skipped() {
    if !have(WITH_SFRAME) {
        return;
    }
    let d = scratch(SCRATCH, "skip");
    let o = run(&["--cache", d.to_str().unwrap(), WITH_SFRAME]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has its own SFrame section"),
        "{}",
        stderr(&o)
    );
    assert!(files_in(&d).is_empty());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let d = scratch(SCRATCH, "bad");
    let garbage = d.join("garbage");
    std::fs::write(&garbage, b"\x7fELF this is not an object").unwrap();
    let empty = d.join("empty");
    std::fs::write(&empty, b"").unwrap();
    // This test program made a RISC-V one (e_machine, at 18).
    let riscv = d.join("riscv");
    let mut data = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    data[18..20].copy_from_slice(&243u16.to_le_bytes());
    std::fs::write(&riscv, &data).unwrap();
    let mut cases = vec![
        (garbage.clone(), "not a readable ELF object"),
        (empty.clone(), "not a readable ELF object"),
        (d.join("missing"), "cannot read"),
        (riscv, "neither an x86_64 nor an AArch64"),
    ];
    if have(LIBZ) {
        let data = std::fs::read(LIBZ).unwrap();
        let short = d.join("short");
        std::fs::write(&short, &data[..4096]).unwrap();
        cases.push((short, "not a readable ELF object"));
    }
    for (path, msg) in &cases {
        let out = d.join("out.sframe");
        let o = run(&["-o", out.to_str().unwrap(), path.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{path:?}: {e}");
        assert!(e.contains(msg), "{path:?}: {e}");
        assert!(!e.contains("panicked"), "{path:?}: {e}");
        assert!(!out.exists());
    }
    // One bad object among good ones: the others are still written.
    if have(LIBZ) {
        let cache = d.join("cache");
        let o = run(&[
            "--cache",
            cache.to_str().unwrap(),
            garbage.to_str().unwrap(),
            LIBZ,
        ]);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(files_in(&cache).len(), 1);
    }
    std::fs::remove_dir_all(&d).unwrap();
}
