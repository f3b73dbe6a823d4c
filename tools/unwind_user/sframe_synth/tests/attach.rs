// SPDX-License-Identifier: GPL-2.0

//! `sframe-synth attach` on a host whose kernel lacks
//! `UNWIND_USER_FILE_ATTACH`: what `--dry-run` would attach (libc, `true`,
//! an object with its own SFrame, the running processes' files), skips,
//! usage errors, and the clean failure of a real attach. On a kernel with
//! the operation, the real attach test attaches `/bin/true`'s section.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::elf::ProgramHeader;
use object::{Object, ObjectSection};
use sframe_synth::{arch::Arch, check_section, elf, synthesize, SectionError};

mod common;
use common::{have, run, scratch, stderr, stdout};

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";
const TRUE: &str = "/bin/true";
/// The prefix of this file's scratch directories.
const SCRATCH: &str = "sframe-synth-attach";

/// The size of the section `sframe-synth` synthesizes for `path`.
fn synthesized_size(path: &str) -> usize {
    let data = std::fs::read(path).unwrap();
    synthesize(&elf::read_elf(&data).unwrap())
        .unwrap()
        .section
        .len()
}

/// A program built with the host's `as --gsframe` (binutils 2.40 writes
/// SFrame V1), in `dir`; `None` if the toolchain cannot.
fn gsframe_program(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("p.c");
    std::fs::write(
        &src,
        "int f(int x) { return x * 3; }\nint main(int c, char **v) { (void)v; return f(c) - 3; }\n",
    )
    .unwrap();
    let out = dir.join("p");
    let built = Command::new("cc")
        .args(["-O2", "-Wa,--gsframe", "-o"])
        .arg(&out)
        .arg(&src)
        .output();
    match built {
        Ok(o) if o.status.success() => Some(out),
        _ => {
            println!("note: cc -Wa,--gsframe failed, skipped");
            None
        }
    }
}

#[test]
fn dry_run_libc_and_true() {
    if !have(LIBC) || !have(TRUE) {
        return;
    }
    let o = run(&["attach", "--dry-run", LIBC, TRUE]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "would attach {LIBC} (synthesized, {} bytes)\n\
             would attach {TRUE} (synthesized, {} bytes)\n\
             attach: 2 would attach, 0 skipped, 0 failed\n",
            synthesized_size(LIBC),
            synthesized_size(TRUE)
        )
    );
    assert_eq!(stderr(&o), "");

    // --report: the coverage, indented under each line.
    let o = run(&["attach", "--dry-run", "--report", LIBC]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("would attach "), "{out}");
    assert!(lines[1].starts_with("  FDEs "), "{out}");
    assert!(out.contains("left out: "), "{out}");
    assert!(lines[1..lines.len() - 1]
        .iter()
        .all(|l| l.starts_with("  ")));
    assert_eq!(
        lines.last(),
        Some(&"attach: 1 would attach, 0 skipped, 0 failed")
    );
}

#[test]
fn own_sframe_is_attached_with_its_gaps_filled() {
    let d = scratch(SCRATCH, "own");
    let Some(p) = gsframe_program(&d) else {
        return;
    };
    let data = std::fs::read(&p).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sec = file.section_by_name(".sframe").unwrap();
    let (bytes, addr) = (sec.data().unwrap(), sec.address());

    // The library's view: the section's own bytes at its sh_addr.
    let l = elf::read_loadable(&data).unwrap();
    assert_eq!(l.exec_segments.len(), 1);
    let own = l.sframe.unwrap();
    assert_eq!((own.data, own.addr), (bytes, addr));
    let text = l.exec_segments[0];
    let h = check_section(Arch::X86_64, bytes, addr, text).unwrap();
    assert!(h.num_fdes >= 2, "{h:?}");
    // Without section headers PT_GNU_SFRAME is used: ld 2.40's runs past
    // the section, to the end of its PT_LOAD; the padding does not matter.
    let elf = object::read::elf::ElfFile64::<object::LittleEndian>::parse(&*data).unwrap();
    let pt = elf
        .elf_program_headers()
        .iter()
        .find(|ph| ph.p_type(object::LittleEndian) == object::elf::PT_GNU_SFRAME)
        .unwrap();
    let pt_bytes = pt.data(object::LittleEndian, &*data).unwrap();
    assert!(pt_bytes.starts_with(bytes));
    assert_eq!(
        check_section(Arch::X86_64, pt_bytes, addr, text).unwrap(),
        h
    );
    // Decoded at another address, its functions leave the text.
    assert!(matches!(
        check_section(Arch::X86_64, bytes, addr + 0x10_0000, text),
        Err(SectionError::Outside { .. })
    ));
    assert!(matches!(
        check_section(Arch::X86_64, &bytes[..20], addr, text),
        Err(SectionError::Decode(_))
    ));
    assert_eq!(
        check_section(Arch::X86_64, &vec![0; (64 << 20) + 1], addr, text),
        Err(SectionError::TooLarge((64 << 20) + 1))
    );

    // The program's own section leaves out the start files' functions
    // (crt1.o's _start, crti.o's _init: assembled without --gsframe),
    // which its .eh_frame has: they are added.
    let path = p.to_str().unwrap();
    let o = run(&["attach", "--dry-run", "--report", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!("would attach {path} (own .sframe + ")),
        "{out}"
    );
    assert!(out.contains("\n  own SFrame V"), "{out}");
    assert!(out.contains(&format!("section at {addr:#x}: ")), "{out}");
    assert!(
        out.contains("\n  from .eh_frame, where it has no function: "),
        "{out}"
    );

    // An own section the kernel would refuse (version 9): .eh_frame then.
    let mut bad = data.clone();
    let off = usize::try_from(sec.file_range().unwrap().0).unwrap();
    bad[off + 2] = 9;
    let badp = d.join("bad");
    std::fs::write(&badp, &bad).unwrap();
    let o = run(&["attach", "--dry-run", badp.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("its own SFrame section is unusable"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("(synthesized, "), "{}", stdout(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn running_finds_this_test() {
    let exe = std::env::current_exe().unwrap();
    let o = run(&["attach", "--running", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let want = format!("would attach {} (synthesized, ", exe.display());
    assert!(lines.iter().any(|l| l.starts_with(&want)), "{out}");
    // The tool itself runs too.
    let me = format!("would attach {} ", env!("CARGO_BIN_EXE_sframe-synth"));
    assert!(lines.iter().any(|l| l.starts_with(&me)), "{out}");
    // Sorted, each once (files other processes map may be skipped: data
    // such as libicudata's); then the summary, which counts them.
    let paths: Vec<&str> = lines[..lines.len() - 1]
        .iter()
        .map(|l| match l.strip_prefix("would attach ") {
            Some(rest) => rest.rsplit_once(" (").unwrap().0,
            None => l.strip_prefix("skipped ").unwrap(),
        })
        .collect();
    assert!(
        paths.windows(2).all(|w| Path::new(w[0]) < Path::new(w[1])),
        "{out}"
    );
    let summary = lines.last().unwrap();
    assert!(summary.starts_with("attach: "), "{out}");
    assert!(summary.ends_with(" skipped, 0 failed"), "{out}");
    let n = |word: &str| {
        lines
            .iter()
            .filter(|l| l.starts_with(&format!("{word} ")))
            .count()
    };
    assert_eq!(
        *summary,
        format!(
            "attach: {} would attach, {} skipped, 0 failed",
            n("would attach"),
            n("skipped")
        )
    );
}

#[test]
fn skips_and_failures() {
    let d = scratch(SCRATCH, "skip");
    let garbage = d.join("garbage");
    std::fs::write(&garbage, b"\x7fELF this is not an object").unwrap();
    let script = d.join("script");
    std::fs::write(&script, b"#!/bin/sh\n").unwrap();
    let (g, s, dir) = (
        garbage.to_str().unwrap(),
        script.to_str().unwrap(),
        d.to_str().unwrap(),
    );
    let o = run(&["attach", "--dry-run", g, s, dir, g]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "skipped {g}\nskipped {s}\nskipped {dir}\nskipped {g}\n\
             attach: 0 would attach, 4 skipped, 0 failed\n"
        )
    );
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{g}: not a readable ELF object")),
        "{e}"
    );
    assert!(
        e.contains(&format!("{dir}: not a regular file, skipped")),
        "{e}"
    );
    assert!(
        e.contains(&format!("{g}: the same file as {g}, skipped")),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");

    // A missing OBJECT fails; the others are still done.
    let missing = d.join("missing");
    let o = run(&["attach", "--dry-run", missing.to_str().unwrap(), s]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "failed {}: No such file or directory (ENOENT); cannot read the file\n\
             skipped {s}\nattach: 0 would attach, 1 skipped, 1 failed\n",
            missing.display()
        )
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn attach_usage_errors_exit_2() {
    for args in [
        &["attach"][..],
        &["attach", "--dry-run"][..],
        &["attach", "--running", TRUE][..],
        &["attach", "--bogus", TRUE][..],
        &["attach", "--cache", "/tmp", TRUE][..],
        &["attach", "-o", "/tmp/x", TRUE][..],
        &["detach"][..],
        &["detach", "--running", TRUE][..],
        &["detach", "--dry-run", TRUE][..],
        &["detach", "--report", TRUE][..],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("Try 'sframe-synth --help'"), "{args:?}");
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    let o = run(&["attach", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let h = stdout(&o);
    assert!(h.contains("sframe-synth attach [--dry-run] [--report] OBJECT..."));
    assert!(h.contains("sframe-synth attach --running [--dry-run] [--report]"));
}

#[test]
fn real_attach_fails_cleanly_without_the_kernel_op() {
    if !have(TRUE) || !have(LIBC) {
        return;
    }
    let o = run(&["attach", TRUE, LIBC]);
    let out = stdout(&o);
    let e = stderr(&o);
    assert!(!e.contains("panicked"), "{e}");
    if !out.contains("kernel has no UNWIND_USER_FILE_ATTACH") {
        // A kernel with the operation: attached, or refused for want of
        // the capability.
        println!("note: the kernel has UNWIND_USER_FILE_ATTACH: {out}{e}");
        assert!(
            out.starts_with(&format!("attached {TRUE} (synthesized, "))
                || out.contains("needs CAP_PERFMON or CAP_SYS_ADMIN"),
            "{out}"
        );
        return;
    }
    // The first EINVAL stops the run: the next object would get the same.
    assert_eq!(o.status.code(), Some(1), "{out}{e}");
    assert!(
        out.starts_with(&format!(
            "failed {TRUE}: Invalid argument (EINVAL); kernel has no UNWIND_USER_FILE_ATTACH ("
        )),
        "{out}"
    );
    assert!(
        out.ends_with("\nattach: 0 attached, 0 skipped, 1 failed, 1 not tried\n"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(e.contains("not trying the rest (1)"), "{e}");
}

#[test]
fn detach_fails_cleanly_on_this_kernel() {
    if !have(TRUE) {
        return;
    }
    // A file with no table (ENOENT), or a kernel without the operation
    // (EINVAL): a line for the object and the summary, no panic.
    let o = run(&["detach", TRUE, "/nonexistent/sframe-synth-test"]);
    let out = stdout(&o);
    let e = stderr(&o);
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(o.status.code(), Some(1), "{out}{e}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first == format!("not attached {TRUE}") || first.starts_with(&format!("failed {TRUE}: ")),
        "{out}"
    );
    assert!(
        out.contains("failed /nonexistent/sframe-synth-test: No such file or directory (ENOENT)"),
        "{out}"
    );
    assert!(
        out.ends_with(" failed\n") && out.contains("\ndetach: "),
        "{out}"
    );
}
