// SPDX-License-Identifier: GPL-2.0

//! `sframe-synth attach`: give the kernel an SFrame section for each
//! object's file (`UNWIND_USER_FILE_ATTACH`), which every process that maps
//! the file gets, those already running included: the object's own section
//! if it has one (with the functions of its `.eh_frame` it leaves out
//! added, if any: [`sframe_synth::gaps`]), else one synthesized from its
//! `.eh_frame`.

pub mod serve;
mod sys;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sframe_synth::{arch::Arch, check_section, elf, gaps, synthesize};

/// Options of `attach` (and of `detach`, which has no others).
pub struct Options {
    detach: bool,
    dry_run: bool,
    report: bool,
    running: bool,
    objects: Vec<PathBuf>,
}

/// Parse the arguments after `attach`, or `detach` when `detach`; `Err`
/// holds the message for a usage error, `Ok(None)` asks for the help text.
pub fn parse_args(
    detach: bool,
    args: impl Iterator<Item = OsString>,
) -> Result<Option<Options>, String> {
    let verb = if detach { "detach" } else { "attach" };
    let mut o = Options {
        detach,
        dry_run: false,
        report: false,
        running: false,
        objects: Vec::new(),
    };
    let mut only_files = false;
    for a in args {
        if only_files {
            o.objects.push(a.into());
            continue;
        }
        let s = a.to_string_lossy();
        match s.as_ref() {
            "-h" | "--help" => return Ok(None),
            "--dry-run" if !detach => o.dry_run = true,
            "--report" if !detach => o.report = true,
            "--running" => o.running = true,
            "--" => only_files = true,
            _ if s.starts_with('-') && s.len() > 1 => {
                return Err(format!("{verb}: unknown option {s}"))
            }
            _ => o.objects.push(a.into()),
        }
    }
    match (o.running, o.objects.is_empty()) {
        (true, false) => Err(format!("{verb}: --running takes no OBJECT")),
        (false, true) => Err(format!("{verb}: no OBJECT given (nor --running)")),
        _ => Ok(Some(o)),
    }
}

/// Largest file read as an object: larger than the largest programs and
/// libraries (a CUDA library is under 1 GiB), and bounds what a user who
/// maps a file of his own executable makes this program read.
const MAX_OBJECT_SIZE: u64 = 1 << 30;
/// `open()` flags (x86_64): a FIFO or a device a path was swapped for
/// meanwhile neither blocks the open nor becomes a controlling terminal.
const O_NOCTTY: i32 = 0o400;
const O_NONBLOCK: i32 = 0o4000;

/// Errno values (asm-generic, as on x86_64) and their names, for messages.
const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const E2BIG: i32 = 7;
const ENOEXEC: i32 = 8;
const ETXTBSY: i32 = 26;
const ENOSPC: i32 = 28;
const ERANGE: i32 = 34;
const EBADMSG: i32 = 74;
const EOPNOTSUPP: i32 = 95;
const ERRNO_NAMES: [(i32, &str); 19] = [
    (EPERM, "EPERM"),
    (ENOENT, "ENOENT"),
    (5, "EIO"),
    (E2BIG, "E2BIG"),
    (ENOEXEC, "ENOEXEC"),
    (9, "EBADF"),
    (12, "ENOMEM"),
    (13, "EACCES"),
    (14, "EFAULT"),
    (16, "EBUSY"),
    (20, "ENOTDIR"),
    (21, "EISDIR"),
    (sys::EINVAL, "EINVAL"),
    (ETXTBSY, "ETXTBSY"),
    (ENOSPC, "ENOSPC"),
    (ERANGE, "ERANGE"),
    (40, "ELOOP"),
    (EBADMSG, "EBADMSG"),
    (EOPNOTSUPP, "EOPNOTSUPP"),
];

/// `strerror (ENAME)` for an error from the system.
fn describe(e: &io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return e.to_string();
    };
    let text = e.to_string();
    let text = text
        .strip_suffix(&format!(" (os error {n})"))
        .unwrap_or(&text);
    match ERRNO_NAMES.iter().find(|&&(v, _)| v == n) {
        Some((_, name)) => format!("{text} ({name})"),
        None => format!("{text} (errno {n})"),
    }
}

/// What an attach's `errno` means here, if more than its text says.
fn hint(errno: i32) -> Option<&'static str> {
    Some(match errno {
        sys::EINVAL if sys::has_pr_unwind_user() => {
            "kernel has no UNWIND_USER_FILE_ATTACH (its PR_UNWIND_USER predates it)"
        }
        sys::EINVAL => "kernel has no UNWIND_USER_FILE_ATTACH (nor PR_UNWIND_USER)",
        EPERM => "needs CAP_PERFMON or CAP_SYS_ADMIN",
        ETXTBSY => "the file is open for writing somewhere",
        ENOEXEC => "the kernel takes x86-64 ELF64 files with one executable PT_LOAD",
        E2BIG => "the section is over the kernel's 64 MiB",
        EBADMSG => "the kernel finds the section malformed",
        EOPNOTSUPP => "the kernel does not support this SFrame version or ABI",
        ERANGE => "a function lies outside the file's executable segment",
        ENOSPC => "the kernel's budget of memory for attached sections is spent",
        _ => return None,
    })
}

/// What became of one object.
enum Outcome {
    /// Attached, or with `--dry-run` ready to be.
    Attached {
        /// Where the section came from.
        kind: String,
        bytes: usize,
        /// Coverage lines for `--report`.
        report: String,
    },
    /// Nothing the kernel could take (the reason is on stderr).
    Skipped,
    /// The file could not be read or the kernel refused the section.
    Failed {
        msg: String,
        /// Every other attach would fail the same way (`EINVAL`, `EPERM`).
        stop: bool,
    },
}

/// Say why `path` is skipped, on stderr.
fn skip(path: &Path, reason: &str) -> Outcome {
    eprintln!("sframe-synth: {}: {reason}, skipped", path.display());
    Outcome::Skipped
}

/// A section ready for the kernel.
struct Prepared {
    section: Vec<u8>,
    /// What its addresses are relative to: `sframe_addr`.
    addr: u64,
    /// Where it came from, for the line printed.
    kind: String,
    report: String,
}

/// The object's own section (`own` at link-time address `addr`) with the
/// functions of its `.eh_frame` that the section leaves out, checked as the
/// kernel will check it; `None` if there are none, or if the section is
/// best used as it is.
fn filled(
    arch: Arch,
    path: &Path,
    data: &[u8],
    own: &[u8],
    addr: u64,
    text: (u64, u64),
) -> Option<gaps::Filled> {
    let syn = elf::read_elf(data)
        .ok()
        .and_then(|obj| synthesize(&obj).ok())?;
    let f = match gaps::fill_gaps(arch, own, addr, &syn.functions) {
        Ok(f) => f?,
        Err(e) => {
            eprintln!(
                "sframe-synth: {}: filling the gaps of its own SFrame section: {e}",
                path.display()
            );
            return None;
        }
    };
    match check_section(arch, &f.section, 0, text) {
        Ok(_) => Some(f),
        Err(e) => {
            eprintln!(
                "sframe-synth: {}: its own SFrame section with its gaps filled would be refused ({e}), attaching it as it is",
                path.display()
            );
            None
        }
    }
}

/// Choose and check the section for the object in `data`; `Err` says why
/// the object is skipped.
fn prepare(path: &Path, data: &[u8]) -> Result<Prepared, String> {
    let obj = elf::read_loadable(data).map_err(|e| e.to_string())?;
    // The kernel describes its own architecture's files: else ENOEXEC.
    if Some(obj.arch) != Arch::HOST {
        return Err(format!("an {} object, not this machine's", obj.arch));
    }
    // The kernel's rule: else ENOEXEC.
    let text = match obj.exec_segments.as_slice() {
        [one] => *one,
        segs => {
            return Err(format!(
                "{} executable PT_LOAD segments, the kernel takes files with one",
                segs.len()
            ))
        }
    };
    if let Some(own) = obj.sframe {
        match check_section(obj.arch, own.data, own.addr, text) {
            Ok(h) => {
                let report = format!(
                    "  own SFrame V{} section at {:#x}: {} functions, {} FREs\n",
                    h.version.number(),
                    own.addr,
                    h.num_fdes,
                    h.num_fres
                );
                return Ok(match filled(obj.arch, path, data, own.data, own.addr, text) {
                    Some(f) => Prepared {
                        kind: format!(
                            "own .sframe + {} function{} from .eh_frame",
                            f.added,
                            if f.added == 1 { "" } else { "s" }
                        ),
                        report: format!(
                            "{report}  from .eh_frame, where it has no function: {} functions, {} bytes of code\n",
                            f.added, f.added_bytes
                        ),
                        section: f.section,
                        addr: 0,
                    },
                    None => Prepared {
                        section: own.data.to_vec(),
                        addr: own.addr,
                        kind: "own .sframe".into(),
                        report,
                    },
                });
            }
            // The kernel would refuse it: .eh_frame may still do.
            Err(e) => eprintln!(
                "sframe-synth: {}: its own SFrame section is unusable ({e}), synthesizing from .eh_frame",
                path.display()
            ),
        }
    }
    let obj = elf::read_elf(data).map_err(|e| e.to_string())?;
    let syn = synthesize(&obj).map_err(|e| e.to_string())?;
    if syn.functions.is_empty() {
        return Err("no function of .eh_frame is encodable".into());
    }
    // Checked as the kernel will: a refusal here is a bug of this tool.
    check_section(obj.eh_frame.arch, &syn.section, 0, text)
        .map_err(|e| format!("synthesized section refused ({e}): a bug of sframe-synth"))?;
    Ok(Prepared {
        section: syn.section,
        addr: 0,
        kind: "synthesized".into(),
        report: syn.stats.to_string(),
    })
}

/// Attach a section to the file of `object`. `seen` maps the files done
/// (device, inode) to their first path: a file is attached once.
fn attach_one(object: &Object, o: &Options, seen: &mut BTreeMap<(u64, u64), PathBuf>) -> Outcome {
    let path = object.path.as_path();
    // A file that vanished or lies in another mount namespace is normal
    // under --running; an OBJECT named on the command line must be there.
    let unreadable = |e: &io::Error| {
        if o.running {
            skip(path, &format!("cannot read: {}", describe(e)))
        } else {
            Outcome::Failed {
                msg: format!("{}; cannot read the file", describe(e)),
                stop: false,
            }
        }
    };
    // Read-only, and kept open across the system call: the kernel reads
    // the program headers of this very file. Only a regular file is used.
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK | O_NOCTTY)
        .open(path);
    let mut file = match opened {
        Ok(f) => f,
        Err(e) => return unreadable(&e),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return unreadable(&e),
    };
    if !meta.is_file() {
        return skip(path, "not a regular file");
    }
    if object.file.is_some_and(|f| f != (meta.dev(), meta.ino())) {
        return skip(path, "not the file mapped any more (its path changed)");
    }
    if let Some(first) = seen.get(&(meta.dev(), meta.ino())) {
        return skip(path, &format!("the same file as {}", first.display()));
    }
    seen.insert((meta.dev(), meta.ino()), path.to_path_buf());
    // Not read whole unless it may be an object: an executable memfd may
    // be a JIT's code, of any size (.NET's is 2 TiB, sparse).
    let too_large = || skip(path, &format!("larger than {} GiB", MAX_OBJECT_SIZE >> 30));
    if meta.len() > MAX_OBJECT_SIZE {
        return too_large();
    }
    let mut magic = [0u8; 4];
    match file.read_exact(&mut magic) {
        Ok(()) if magic == *b"\x7fELF" => {}
        Ok(()) => return skip(path, "not an ELF file"),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return skip(path, "not an ELF file"),
        Err(e) => return unreadable(&e),
    }
    let mut data = magic.to_vec();
    // Bounded: the file may have grown since.
    if let Err(e) = (&mut file).take(MAX_OBJECT_SIZE).read_to_end(&mut data) {
        return unreadable(&e);
    }
    if data.len() as u64 > MAX_OBJECT_SIZE {
        return too_large();
    }
    let p = match prepare(path, &data) {
        Ok(p) => p,
        Err(reason) => return skip(path, &reason),
    };
    let done = Outcome::Attached {
        kind: p.kind,
        bytes: p.section.len(),
        report: p.report,
    };
    if o.dry_run {
        return done;
    }
    match sys::file_attach(&file, &p.section, p.addr, object.hold) {
        Ok(()) => done,
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(0);
            Outcome::Failed {
                msg: match hint(errno) {
                    Some(h) => format!("{}; {h}", describe(&e)),
                    None => describe(&e),
                },
                stop: errno == sys::EINVAL || errno == EPERM,
            }
        }
    }
}

/// A file mapped executable, as a line of `/proc/PID/maps` shows it.
#[derive(Debug, PartialEq)]
struct ExecMapping<'a> {
    /// `START-END`, the name of its entry in `/proc/PID/map_files`.
    range: &'a OsStr,
    /// `MAJOR:MINOR INODE`: which file it is, whatever its path says.
    file: (&'a [u8], &'a [u8]),
    path: &'a OsStr,
    /// The path no longer names it (unlinked, or replaced by a rename,
    /// as a package manager upgrades a library).
    deleted: bool,
}

/// The files mapped executable in the text of a `/proc/PID/maps`: lines
/// with `x` in the permissions and a path (not `[vdso]` and the like).
fn exec_mappings(maps: &[u8]) -> impl Iterator<Item = ExecMapping<'_>> {
    maps.split(|&b| b == b'\n').filter_map(|line| {
        // address perms offset dev inode, then the path after padding
        // (it may hold spaces).
        let mut fields = line.splitn(6, |&b| b == b' ');
        let range = fields.next()?;
        let perms = fields.next()?;
        let (dev, inode) = (fields.nth(1)?, fields.next()?);
        let path = fields.next()?.trim_ascii_start();
        if !perms.contains(&b'x') || !path.starts_with(b"/") {
            return None;
        }
        let (path, deleted) = match path.strip_suffix(b" (deleted)") {
            Some(p) => (p, true),
            None => (path, false),
        };
        Some(ExecMapping {
            range: OsStr::from_bytes(range),
            file: (dev, inode),
            path: OsStr::from_bytes(path),
            deleted,
        })
    })
}

/// A file to attach: where to open it, whether the kernel's table is to
/// hold it, and which file it must be (device and inode, as `stat()` of
/// the process's `map_files` entry gave them), if known.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Object {
    path: PathBuf,
    hold: bool,
    file: Option<(u64, u64)>,
}

/// A mapped file, once: by `stat()` of its `map_files` entry, or where
/// that cannot be followed (without `CAP_SYS_ADMIN`), by the device and
/// inode the maps show (which distinct files of btrfs subvolumes or
/// overlayfs layers may share) and its path.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum FileKey {
    Stat(u64, u64),
    Maps(Vec<u8>, Vec<u8>, Vec<u8>),
}

/// Does `m`'s path name, here, the file mapped (`mapped`: device and
/// inode, as `stat()` of its `/proc/PID/map_files` entry gives them,
/// whose device numbers are not always the maps': btrfs subvolumes)?
/// Where the entry cannot be followed, the path is taken for the file, as
/// it names it here if anything.
fn names_here(m: &ExecMapping<'_>, mapped: Option<(u64, u64)>) -> bool {
    let Ok(here) = fs::metadata(m.path) else {
        return false;
    };
    mapped.is_none_or(|f| f == (here.dev(), here.ino()))
}

/// Every file some process maps executable, each once (by device and
/// inode), sorted: by its path, where the path names it here, held by the
/// kernel's table as a named `OBJECT` is. Else (a library replaced while a
/// process that had mapped it still runs, a file of a container's mount
/// namespace) by the process's `/proc/PID/map_files` entry, which opens
/// the file mapped (as root), and not held: a container's file system is
/// not to stay mounted for the table's sake, and a file with no name left
/// is not to outlive its last mapping.
fn running_objects() -> Result<Vec<Object>, String> {
    let proc = fs::read_dir("/proc").map_err(|e| format!("cannot list /proc: {e}"))?;
    let mut files = BTreeMap::new();
    let (mut read, mut denied) = (0usize, 0usize);
    for entry in proc.flatten() {
        let name = entry.file_name();
        if name.is_empty() || !name.as_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        // A process may exit meanwhile.
        match fs::read(entry.path().join("maps")) {
            Ok(maps) => {
                read += 1;
                for m in exec_mappings(&maps) {
                    let mapped = entry.path().join("map_files").join(m.range);
                    let file = fs::metadata(&mapped).ok().map(|f| (f.dev(), f.ino()));
                    let key = match file {
                        Some((dev, ino)) => FileKey::Stat(dev, ino),
                        None => FileKey::Maps(
                            m.file.0.to_vec(),
                            m.file.1.to_vec(),
                            m.path.as_bytes().to_vec(),
                        ),
                    };
                    if files.contains_key(&key) {
                        continue;
                    }
                    let object = if !m.deleted && names_here(&m, file) {
                        Object {
                            path: PathBuf::from(m.path),
                            hold: true,
                            file,
                        }
                    } else {
                        Object {
                            path: mapped,
                            hold: false,
                            file,
                        }
                    };
                    files.insert(key, object);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => denied += 1,
            Err(_) => {}
        }
    }
    if denied > 0 {
        eprintln!(
            "sframe-synth: attach: the maps of {denied} processes are not readable (permission denied)"
        );
    }
    if read == 0 {
        return Err("no /proc/PID/maps readable".into());
    }
    let mut objects: Vec<Object> = files.into_values().collect();
    objects.sort();
    Ok(objects)
}

/// What `path` maps, if it is a `/proc/PID/map_files` entry: the mapped
/// file's path then, as the process's maps show it.
fn mapped_as(path: &Path) -> Option<PathBuf> {
    let dir = path.parent()?;
    (dir.file_name()? == "map_files")
        .then(|| fs::read_link(path).ok())
        .flatten()
}

/// `detach` of one object: `Ok(true)` if its file had a table.
fn detach_one(path: &Path) -> Result<bool, String> {
    let file = File::open(path).map_err(|e| format!("{}; cannot read the file", describe(&e)))?;
    match sys::file_detach(&file) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(ENOENT) => Ok(false),
        Err(e) => Err(describe(&e)),
    }
}

/// Run `detach`: one line per object on stdout, then the summary.
fn run_detach(objects: &[Object]) -> ExitCode {
    let (mut detached, mut none, mut failed) = (0usize, 0usize, 0usize);
    for Object { path, .. } in objects {
        match detach_one(path) {
            Ok(true) => {
                detached += 1;
                println!("detached {}", path.display());
            }
            Ok(false) => {
                none += 1;
                println!("not attached {}", path.display());
            }
            Err(msg) => {
                failed += 1;
                println!("failed {}: {msg}", path.display());
            }
        }
    }
    println!("detach: {detached} detached, {none} not attached, {failed} failed");
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Run `status`: the kernel's machine-wide counts of file tables, one
/// `name=value` line, `name=?` for what the kernel does not report.
pub fn status() -> ExitCode {
    match sys::file_counts() {
        Ok(c) => {
            let v = |x: Option<u64>| x.map_or_else(|| "?".into(), |n| n.to_string());
            println!(
                "file_tables={} file_bytes={} files_wanted={} wants_dropped={}",
                v(c.tables),
                v(c.bytes),
                v(c.wanted),
                v(c.dropped)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sframe-synth: status: UNWIND_USER_QUERY: {}", describe(&e));
            ExitCode::from(1)
        }
    }
}

/// Run `attach` or `detach`: one line per object on stdout, then the
/// summary.
pub fn run(o: &Options) -> ExitCode {
    let objects = if o.running {
        match running_objects() {
            Ok(v) => v,
            Err(msg) => {
                eprintln!(
                    "sframe-synth: {}: {msg}",
                    if o.detach { "detach" } else { "attach" }
                );
                return ExitCode::from(1);
            }
        }
    } else {
        o.objects
            .iter()
            .map(|path| Object {
                path: path.clone(),
                hold: true,
                file: None,
            })
            .collect()
    };
    if o.detach {
        return run_detach(&objects);
    }
    let label = if o.dry_run {
        "would attach"
    } else {
        "attached"
    };
    let mut seen = BTreeMap::new();
    let (mut attached, mut skipped, mut failed, mut not_tried) = (0usize, 0usize, 0usize, 0usize);
    for (i, object) in objects.iter().enumerate() {
        let path = &object.path;
        match attach_one(object, o, &mut seen) {
            Outcome::Attached {
                kind,
                bytes,
                report,
            } => {
                attached += 1;
                let what = mapped_as(path)
                    .map(|p| format!("; mapped as {}", p.display()))
                    .unwrap_or_default();
                println!("{label} {} ({kind}, {bytes} bytes{what})", path.display());
                if o.report {
                    print!("{report}");
                }
            }
            Outcome::Skipped => {
                skipped += 1;
                println!("skipped {}", path.display());
            }
            Outcome::Failed { msg, stop } => {
                failed += 1;
                println!("failed {}: {msg}", path.display());
                if stop {
                    not_tried = objects.len().saturating_sub(i.saturating_add(1));
                    if not_tried > 0 {
                        eprintln!(
                            "sframe-synth: attach: not trying the rest ({not_tried}): each would fail the same way"
                        );
                    }
                    break;
                }
            }
        }
    }
    let rest = if not_tried > 0 {
        format!(", {not_tried} not tried")
    } else {
        String::new()
    };
    println!("attach: {attached} {label}, {skipped} skipped, {failed} failed{rest}");
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(maps: &str) -> Vec<(&str, bool)> {
        exec_mappings(maps.as_bytes())
            .map(|m| (m.path.to_str().unwrap_or("?"), m.deleted))
            .collect()
    }

    #[test]
    fn maps_lines() {
        let maps = "\
55d0c2a00000-55d0c2a02000 r--p 00000000 fe:01 1234                       /usr/bin/true
55d0c2a02000-55d0c2a06000 r-xp 00002000 fe:01 1234                       /usr/bin/true
7f0000000000-7f0000001000 r-xp 00000000 fe:01 99                         /opt/a dir/lib x.so
7f0000002000-7f0000003000 r-xp 00000000 fe:01 98                         /tmp/gone.so (deleted)
7f0000004000-7f0000005000 rwxp 00000000 00:00 0 
7f0000006000-7f0000007000 r-xp 00000000 00:01 7                          /memfd:jit (deleted)
7ffd1a1f0000-7ffd1a1f2000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
7f0000008000-7f0000009000 r--p 00000000 fe:01 5                          /usr/lib/locale/C.utf8/LC_CTYPE
";
        assert_eq!(
            paths(maps),
            [
                ("/usr/bin/true", false),
                ("/opt/a dir/lib x.so", false),
                ("/tmp/gone.so", true),
                ("/memfd:jit", true)
            ]
        );
        let gone = exec_mappings(maps.as_bytes()).nth(2);
        assert_eq!(
            gone,
            Some(ExecMapping {
                range: OsStr::new("7f0000002000-7f0000003000"),
                file: (&b"fe:01"[..], &b"98"[..]),
                path: OsStr::new("/tmp/gone.so"),
                deleted: true,
            })
        );
        assert!(paths("").is_empty());
        assert!(paths("garbage\n\n").is_empty());
    }

    #[test]
    fn errno_text() {
        assert_eq!(
            describe(&io::Error::from_raw_os_error(sys::EINVAL)),
            "Invalid argument (EINVAL)"
        );
        assert_eq!(
            describe(&io::Error::from_raw_os_error(ETXTBSY)),
            "Text file busy (ETXTBSY)"
        );
        assert!(describe(&io::Error::from_raw_os_error(4095)).ends_with("(errno 4095)"));
        assert_eq!(hint(EPERM), Some("needs CAP_PERFMON or CAP_SYS_ADMIN"));
        assert_eq!(hint(12), None);
    }
}
