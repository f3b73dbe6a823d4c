// SPDX-License-Identifier: GPL-2.0

//! `sframe-synth`: write SFrame V3 sections synthesized from `.eh_frame`,
//! or attach sections to files for the kernel (`attach`).

// `attach`'s system call is the one exception (`attach/sys.rs`).
#![deny(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod attach;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sframe_synth::{elf, synthesize};

const HELP: &str = "\
sframe-synth: synthesize an SFrame V3 section from the .eh_frame of an
x86_64 or AArch64 ELF executable or shared object built without SFrame.

Usage: sframe-synth [--cache DIR] [-o OUT] [--report] OBJECT...
       sframe-synth attach [--dry-run] [--report] OBJECT...
       sframe-synth attach --running [--dry-run] [--report]
       sframe-synth detach OBJECT... | --running
       sframe-synth serve [--cache DIR | --no-cache] [--cache-max-mib N] [--jobs N]
       sframe-synth status

  --cache DIR  write DIR/<GNU build ID in hex>.sframe for every OBJECT
               (DIR is created; each file is written to a temporary file
               and renamed into place)
  -o OUT       write the section of the one OBJECT to OUT (same way; an
               OUT that exists and is not a regular file, such as
               /dev/null or a FIFO, is written into instead)
  --report     print per object: FDEs, functions encoded, text bytes
               covered, section size against .eh_frame, and how many
               functions were left out for which reason
  -h, --help   print this text

A function is encoded only if every row of its CFI is CFA = RSP or RBP +
offset, return address at CFA - 8 and RBP unchanged or saved at CFA +
offset (a row with the return address undefined is encoded as outermost).
The one CFA expression understood is GNU ld's for lazy .plt entries
(CFA = RSP + 8, or + 16 once the entry has pushed its index): those
entries are encoded as a PC-mask FDE of 16-byte blocks, as ld does.
Other functions (other CFA expressions such as signal trampolines', a CFA
in another register as after stack realignment, ...) are left out, so
that the kernel falls back to frame pointers for them. Objects that
already carry SFrame (.sframe section or PT_GNU_SFRAME) are skipped.

Address convention: the section is encoded as if it were located at address
0 of the object's link-time address space, i.e. its function start
addresses are the object's link-time virtual addresses (st_value, FDE
pc_begin). At run time, decode it as if it sat at the object's load bias:
register it with prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER) and
UNWIND_USER_SFRAME_F_ADDR, sframe_addr = load bias.

attach: give the kernel an SFrame section for the file of each OBJECT,
which every process that maps the file gets, those already running
included: prctl(PR_UNWIND_USER, UNWIND_USER_FILE_ATTACH), which needs
CAP_PERFMON or CAP_SYS_ADMIN. The section is the object's own (.sframe,
PT_GNU_SFRAME; sframe_addr = its link-time address) if the kernel can take
it, with the functions of .eh_frame it leaves out added if there are any
(a static program built with --gsframe whose C library was not:
sframe_addr = 0), else one synthesized from .eh_frame as above
(sframe_addr = 0).

  --running    every file a process maps executable (/proc/*/maps),
               not OBJECTs; one replaced since it was mapped, or of
               another mount namespace (a container's), through
               /proc/PID/map_files (needs CAP_SYS_ADMIN), and not held
               by the kernel (UNWIND_USER_FILE_F_NO_HOLD)
  --dry-run    do everything but the system call
  --report     print each section's coverage (indented lines)

One line per object on stdout: 'attached PATH (synthesized, N bytes)',
'(own .sframe, N bytes)' or '(own .sframe + K functions from .eh_frame,
N bytes)' ('would attach' with --dry-run), 'skipped
PATH' (not an ELF executable or shared object of this machine's
architecture with one executable PT_LOAD, no .eh_frame, nothing encodable: the reason on stderr), 'failed
PATH: ERROR (ENAME); WHY'; then 'attach: N attached, M skipped, K
failed'. After EINVAL (a kernel without UNWIND_USER_FILE_ATTACH) or EPERM
the remaining objects are not tried. Every run attaches again: the kernel
keeps one table a file, the new one.

detach: the file of each OBJECT (or every file a process maps executable)
has no table any more: UNWIND_USER_FILE_DETACH, same privilege. One line
per object: 'detached PATH', 'not attached PATH' or 'failed PATH: ERROR';
then 'detach: N detached, M not attached, K failed'. Processes that have
a table keep it until they unmap the file.

serve: be the machine's provider of file tables
(UNWIND_USER_FILE_PROVIDE, which needs CAP_SYS_ADMIN), until killed. The kernel asks
for the table of each file a walk meets with none and no section of its
own, once a file, whenever the program that maps it started, with a
read-only descriptor of it (files of containers, deleted files and memfds
alike); serve answers with the section attach would give it (not held by
the kernel: it goes with the inode), or that the file has nothing to give,
which the kernel remembers. While a file waits for its answer, walks end
at its code rather than guess with frame pointers. Answers are kept in
the cache directory (default /var/cache/sframe-synth, bounded to
--cache-max-mib, default 256; oldest out first), keyed by build ID and
size, so that a restart or a reboot does not synthesize them again.
--jobs N files are served at a time (2), the smallest waiting first. One
line per file: 'attached PATH (KIND, N bytes, T ms, L ms since asked, W
walks) at S' (L: from the first walk that met it; S: CLOCK_MONOTONIC
seconds), 'nothing for PATH (WHY, T ms) at S' or 'failed PATH: ERROR';
every minute a line of counts.
Killed, the kernel stops waiting for its answers; the next serve is asked
again for every file the kernel found no section in.

status: the kernel's machine-wide counts, one line: 'file_tables=N
file_bytes=B files_wanted=W wants_dropped=D' (files described by a
table, the kernel memory of those tables, files the provider was asked
for, files not asked for because its queue was full; '?' where the
kernel does not report one).

Exit status: 0 if every OBJECT was written (or attached, or skipped, or
detached, or had no table), 1 if one failed, 2 on a usage error.
";

/// Command line options.
struct Options {
    cache: Option<PathBuf>,
    out: Option<PathBuf>,
    report: bool,
    objects: Vec<PathBuf>,
}

/// Parse the command line; `Err` holds the message for a usage error,
/// `Ok(None)` means help was printed.
fn parse_args(args: impl Iterator<Item = OsString>) -> Result<Option<Options>, String> {
    let mut o = Options {
        cache: None,
        out: None,
        report: false,
        objects: Vec::new(),
    };
    let mut args = args.peekable();
    let mut only_files = false;
    while let Some(a) = args.next() {
        if only_files {
            o.objects.push(a.into());
            continue;
        }
        let s = a.to_string_lossy();
        let mut value = |name: &str| {
            args.next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{name} needs an argument"))
        };
        match s.as_ref() {
            "-h" | "--help" => {
                print!("{HELP}");
                return Ok(None);
            }
            "--report" => o.report = true,
            "--cache" => o.cache = Some(value("--cache")?),
            "-o" => o.out = Some(value("-o")?),
            "--" => only_files = true,
            _ if s.starts_with("--cache=") => {
                o.cache = Some(PathBuf::from(s.trim_start_matches("--cache=")));
            }
            _ if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option {s}")),
            _ => o.objects.push(a.into()),
        }
    }
    if o.objects.is_empty() {
        return Err("no OBJECT given".into());
    }
    if o.out.is_some() && o.objects.len() > 1 {
        return Err("-o takes one OBJECT; use --cache for several".into());
    }
    if o.cache.is_none() && o.out.is_none() && !o.report {
        return Err("nothing to do: give --cache DIR, -o OUT or --report".into());
    }
    Ok(Some(o))
}

/// Write `bytes` to `path` through a temporary file in the same directory
/// and a rename, so that readers never see a partial file.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Write `bytes` to the `-o` file: a regular file (or a new one) is
/// replaced atomically; anything else that exists (`/dev/null`,
/// `/dev/stdout`, a FIFO) is written into, never replaced by a rename.
fn write_out(path: &Path, bytes: &[u8]) -> Result<(), String> {
    match fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        _ => write_atomic(path, bytes),
    }
}

/// Process one object. `Ok` carries nothing: messages are printed here.
fn run_one(path: &Path, o: &Options) -> Result<(), String> {
    let data = fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let obj = elf::read_elf(&data).map_err(|e| e.to_string())?;
    let id = obj.build_id_hex();
    if obj.has_sframe {
        eprintln!(
            "sframe-synth: {}: has its own SFrame section (.sframe / PT_GNU_SFRAME), skipped",
            path.display()
        );
        return Ok(());
    }
    let syn = synthesize(&obj).map_err(|e| e.to_string())?;
    let mut written = Vec::new();
    if let Some(dir) = &o.cache {
        // A build ID names the file: refuse what cannot be a sane name.
        let id = id
            .as_deref()
            .filter(|h| (2..=128).contains(&h.len()))
            .ok_or("no usable GNU build ID (NT_GNU_BUILD_ID) to name the cache file; use -o")?;
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let file = dir.join(format!("{id}.sframe"));
        write_atomic(&file, &syn.section)?;
        written.push(file);
    }
    if let Some(out) = &o.out {
        write_out(out, &syn.section)?;
        written.push(out.clone());
    }
    if o.report {
        println!(
            "{} (build ID {}){}",
            path.display(),
            id.as_deref().unwrap_or("none"),
            written
                .iter()
                .map(|w| format!(" -> {}", w.display()))
                .collect::<String>()
        );
        print!("{}", syn.stats);
    }
    Ok(())
}

/// Report a usage error: exit status 2.
fn usage_error(msg: &str) -> ExitCode {
    eprintln!("sframe-synth: {msg}\nTry 'sframe-synth --help'.");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    let verb = args.peek().map(|a| a.as_os_str());
    let detach = verb == Some(OsStr::new("detach"));
    if verb == Some(OsStr::new("serve")) {
        args.next();
        return match attach::serve::parse_args(args) {
            Ok(Some(o)) => attach::serve::run(&o),
            Ok(None) => {
                print!("{HELP}");
                ExitCode::SUCCESS
            }
            Err(msg) => usage_error(&msg),
        };
    }
    if verb == Some(OsStr::new("status")) {
        return attach::status();
    }
    if detach || verb == Some(OsStr::new("attach")) {
        args.next();
        return match attach::parse_args(detach, args) {
            Ok(Some(o)) => attach::run(&o),
            Ok(None) => {
                print!("{HELP}");
                ExitCode::SUCCESS
            }
            Err(msg) => usage_error(&msg),
        };
    }
    let opts = match parse_args(args) {
        Ok(Some(o)) => o,
        Ok(None) => return ExitCode::SUCCESS,
        Err(msg) => return usage_error(&msg),
    };
    let mut failed = false;
    for path in &opts.objects {
        if let Err(msg) = run_one(path, &opts) {
            eprintln!("sframe-synth: {}: {msg}", path.display());
            failed = true;
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
