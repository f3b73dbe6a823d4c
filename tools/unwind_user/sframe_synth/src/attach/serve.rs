// SPDX-License-Identifier: GPL-2.0

//! `sframe-synth serve`: the machine's provider of file tables. The kernel
//! asks for the table of each file a walk meets with none
//! (`UNWIND_USER_FILE_PROVIDE`), once a file, with a read-only descriptor
//! of it; this answers each, in the order asked, with the section `attach`
//! would give the file, or with "nothing for this file". Sections are kept
//! in a cache directory keyed by the file's build ID (or, without one, its
//! device, inode, size and mtime), so that a restart or a reboot does not
//! synthesize a library again.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use super::{describe, hint, prepare, sys, MAX_OBJECT_SIZE};
use sframe_synth::elf;

/// Options of `serve`.
pub struct Options {
    cache: Option<PathBuf>,
    cache_max: u64,
    jobs: usize,
}

/// Default cache directory, as a distribution installs it.
const CACHE_DIR: &str = "/var/cache/sframe-synth";
/// Default bound of the cache, in bytes.
const CACHE_MAX: u64 = 256 << 20;

/// Parse the arguments after `serve`; `Ok(None)` asks for the help text.
pub fn parse_args(args: impl Iterator<Item = OsString>) -> Result<Option<Options>, String> {
    let mut o = Options {
        cache: Some(PathBuf::from(CACHE_DIR)),
        cache_max: CACHE_MAX,
        jobs: 2,
    };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let s = a.to_string_lossy().into_owned();
        match s.as_str() {
            "-h" | "--help" => return Ok(None),
            "--no-cache" => o.cache = None,
            "--cache" | "--cache-max-mib" | "--jobs" => {
                let v = args
                    .next()
                    .ok_or_else(|| format!("serve: {s} needs a value"))?;
                if s == "--cache" {
                    o.cache = Some(PathBuf::from(v));
                } else if s == "--jobs" {
                    o.jobs = v
                        .to_string_lossy()
                        .parse()
                        .ok()
                        .filter(|n| (1..=64).contains(n))
                        .ok_or_else(|| format!("serve: bad --jobs {}", v.to_string_lossy()))?;
                } else {
                    let mib: u64 = v.to_string_lossy().parse().map_err(|_| {
                        format!("serve: bad --cache-max-mib {}", v.to_string_lossy())
                    })?;
                    o.cache_max = mib.saturating_mul(1 << 20);
                }
            }
            _ => return Err(format!("serve: unknown argument {s}")),
        }
    }
    Ok(Some(o))
}

/// Magic of a cache entry, then the section's link-time address (u64,
/// little-endian), then what the entry says: 1 and the section, or 0 for
/// a file with nothing to give (and why, in UTF-8).
const MAGIC: &[u8; 8] = b"SFSYNC1\0";

/// What the service gives a file.
enum Answer {
    Section {
        bytes: Vec<u8>,
        addr: u64,
        kind: String,
    },
    Nothing(String),
}

fn encode(a: &Answer) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    match a {
        Answer::Section { bytes, addr, .. } => {
            v.extend_from_slice(&addr.to_le_bytes());
            v.push(1);
            v.extend_from_slice(bytes);
        }
        Answer::Nothing(why) => {
            v.extend_from_slice(&0u64.to_le_bytes());
            v.push(0);
            v.extend_from_slice(why.as_bytes());
        }
    }
    v
}

fn decode(v: &[u8]) -> Option<Answer> {
    let rest = v.strip_prefix(MAGIC)?;
    let addr = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
    let (&kind, body) = rest.get(8..)?.split_first()?;
    Some(match kind {
        1 if !body.is_empty() => Answer::Section {
            bytes: body.to_vec(),
            addr,
            kind: "cached".into(),
        },
        0 => Answer::Nothing(format!("{} (cached)", String::from_utf8_lossy(body))),
        _ => return None,
    })
}

/// The cache key of a file: its build ID, or where it has none, which
/// file it is and which version (device, inode, size, mtime).
fn cache_key(data: &[u8], meta: &fs::Metadata) -> String {
    let id = elf::read_elf(data).ok().and_then(|o| o.build_id_hex());
    match id.filter(|h| (2..=128).contains(&h.len())) {
        Some(id) => format!("{id}-{}", meta.len()),
        None => format!(
            "noid-{:x}-{:x}-{}-{}.{}",
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        ),
    }
}

/// The cache directory and what it holds, bounded.
struct Cache {
    dir: PathBuf,
    max: u64,
    writes: AtomicU32,
}

impl Cache {
    fn get(&self, key: &str) -> Option<Answer> {
        let path = self.dir.join(key);
        let v = fs::read(&path).ok()?;
        let a = decode(&v);
        if a.is_none() {
            let _ = fs::remove_file(&path);
        }
        a
    }

    fn put(&self, key: &str, a: &Answer) {
        let path = self.dir.join(key);
        let tmp = self.dir.join(format!(".{key}.{}", std::process::id()));
        let written = File::create(&tmp)
            .and_then(|mut f| f.write_all(&encode(a)))
            .and_then(|()| fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            eprintln!("sframe-synth: serve: cannot write {}: {e}", path.display());
            return;
        }
        let writes = self.writes.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        if writes.is_multiple_of(32) {
            self.trim();
        }
    }

    /// Removes the oldest entries while the cache is over its bound.
    fn trim(&self) {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = rd
            .flatten()
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                Some((m.modified().ok()?, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(len);
            }
        }
    }
}

/// What the service did, for its log.
#[derive(Default)]
struct Counts {
    attached: u64,
    nothing: u64,
    failed: u64,
    unopened: u64,
    cache_hits: u64,
    overflows: u64,
}

/// A wanted file, waiting for a worker.
struct Job {
    file: File,
    /// Its size: the smallest waiting is served first, so that a large
    /// file does not hold up the many small ones behind it.
    size: u64,
    walks: u32,
    asked_ns: u64,
}

/// Serve one wanted file.
fn serve_one(job: Job, cache: Option<&Cache>, n: &Mutex<Counts>) {
    let Job {
        mut file,
        walks,
        asked_ns,
        ..
    } = job;
    let count = |f: fn(&mut Counts)| {
        if let Ok(mut c) = n.lock() {
            f(&mut c);
        }
    };
    let t0 = Instant::now();
    let path = fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&file)
    ))
    .unwrap_or_else(|_| PathBuf::from("?"));
    let (answer, key, hit) = match answer_cached(&mut file, &path, cache) {
        Ok(r) => r,
        Err(msg) => {
            count(|c| c.failed += 1);
            println!("failed {}: {msg}", path.display());
            return;
        }
    };
    let done = match &answer {
        Answer::Section { bytes, addr, .. } => sys::file_attach(&file, bytes, *addr, false),
        Answer::Nothing(_) => sys::file_answer_none(&file),
    };
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    // From the first walk that met the file to its answer, and when that
    // was (CLOCK_MONOTONIC, as perf record -k CLOCK_MONOTONIC stamps
    // samples).
    let now = sys::monotonic_ns();
    let since = now.saturating_sub(asked_ns) as f64 / 1e6;
    let at = format!("{}.{:09}", now / 1_000_000_000, now % 1_000_000_000);
    match (done, &answer) {
        (Ok(()), Answer::Section { bytes, kind, .. }) => {
            count(|c| c.attached += 1);
            println!(
                "attached {} ({kind}, {} bytes, {ms:.1} ms, {since:.1} ms since asked, {walks} walks) at {at}",
                path.display(),
                bytes.len()
            );
        }
        (Ok(()), Answer::Nothing(why)) => {
            count(|c| c.nothing += 1);
            println!("nothing for {} ({why}, {ms:.1} ms) at {at}", path.display());
        }
        (Err(e), _) => {
            count(|c| c.failed += 1);
            let errno = e.raw_os_error().unwrap_or(0);
            let h = hint(errno).map(|h| format!("; {h}")).unwrap_or_default();
            println!("failed {}: {}{h}", path.display(), describe(&e));
        }
    }
    if hit {
        count(|c| c.cache_hits += 1);
    } else if let (Some(c), Some(k)) = (cache, key) {
        c.put(&k, &answer);
    }
}

/// The wanted files waiting for a worker.
struct Queue {
    jobs: Mutex<Vec<Job>>,
    ready: Condvar,
}

/// A worker: serves the smallest waiting file, again and again.
fn worker(q: &Queue, cache: Option<&Cache>, n: &Mutex<Counts>) {
    loop {
        let job = {
            let Ok(mut jobs) = q.jobs.lock() else {
                return;
            };
            loop {
                let smallest = jobs
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, j)| j.size)
                    .map(|(i, _)| i);
                if let Some(i) = smallest {
                    break jobs.swap_remove(i);
                }
                jobs = match q.ready.wait(jobs) {
                    Ok(j) => j,
                    Err(_) => return,
                };
            }
        };
        serve_one(job, cache, n);
    }
}

/// The answer for `file` (`path` for messages), from the cache if it has
/// it: (answer, its cache key, whether it came from the cache).
fn answer_cached(
    file: &mut File,
    path: &Path,
    cache: Option<&Cache>,
) -> Result<(Answer, Option<String>, bool), String> {
    let meta = file.metadata().map_err(|e| describe(&e))?;
    if !meta.is_file() {
        return Ok((Answer::Nothing("not a regular file".into()), None, false));
    }
    if meta.len() > MAX_OBJECT_SIZE {
        return Ok((Answer::Nothing("too large".into()), None, false));
    }
    let mut data = Vec::new();
    (&mut *file)
        .take(MAX_OBJECT_SIZE)
        .read_to_end(&mut data)
        .map_err(|e| describe(&e))?;
    if !data.starts_with(b"\x7fELF") {
        return Ok((Answer::Nothing("not an ELF file".into()), None, false));
    }
    // The key needs only the build ID: cheap next to synthesizing.
    let key = cache_key(&data, &meta);
    if let Some(a) = cache.and_then(|c| c.get(&key)) {
        return Ok((a, Some(key), true));
    }
    let a = match prepare(path, &data) {
        Ok(p) => Answer::Section {
            bytes: p.section,
            addr: p.addr,
            kind: p.kind,
        },
        Err(why) => Answer::Nothing(why),
    };
    Ok((a, Some(key), false))
}

/// Run `serve` until killed, or until the kernel's descriptor fails.
pub fn run(o: &Options) -> ExitCode {
    let provider = match sys::file_provide() {
        Ok(f) => f,
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(0);
            let why = match errno {
                sys::EINVAL => "kernel has no UNWIND_USER_FILE_PROVIDE".to_string(),
                16 => "another provider of file tables is registered (EBUSY)".to_string(),
                _ => format!(
                    "{}{}",
                    describe(&e),
                    hint(errno).map(|h| format!("; {h}")).unwrap_or_default()
                ),
            };
            eprintln!("sframe-synth: serve: {why}");
            return ExitCode::from(1);
        }
    };
    let cache = o
        .cache
        .as_ref()
        .and_then(|dir| match fs::create_dir_all(dir) {
            Ok(()) => Some(Cache {
                dir: dir.clone(),
                max: o.cache_max,
                writes: AtomicU32::new(0),
            }),
            Err(e) => {
                eprintln!(
                    "sframe-synth: serve: no cache: cannot create {}: {e}",
                    dir.display()
                );
                None
            }
        });
    println!(
        "serve: providing file tables ({} workers, cache {})",
        o.jobs,
        cache
            .as_ref()
            .map_or_else(|| "none".into(), |c| c.dir.display().to_string())
    );
    let _ = io::stdout().flush();
    let n = Mutex::new(Counts::default());
    let q = Queue {
        jobs: Mutex::new(Vec::new()),
        ready: Condvar::new(),
    };
    thread::scope(|scope| {
        for _ in 0..o.jobs {
            scope.spawn(|| worker(&q, cache.as_ref(), &n));
        }
        let mut last = Instant::now();
        loop {
            let wants = match sys::read_wants(&provider) {
                Ok(w) => w,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!(
                        "sframe-synth: serve: reading the kernel's wants: {}",
                        describe(&e)
                    );
                    std::process::exit(1);
                }
            };
            for w in wants {
                match w.file {
                    Ok(file) => {
                        let size = file.metadata().map_or(u64::MAX, |m| m.len());
                        if let Ok(mut jobs) = q.jobs.lock() {
                            jobs.push(Job {
                                file,
                                size,
                                walks: w.walks,
                                asked_ns: w.asked_ns,
                            });
                        }
                        q.ready.notify_one();
                    }
                    Err(_) if w.flags & sys::WANT_F_OVERFLOW != 0 => {
                        if let Ok(mut c) = n.lock() {
                            c.overflows += 1;
                        }
                        println!(
                            "overflow: the kernel dropped wants (its queue was full): attaching every running program's files"
                        );
                        let _ = io::stdout().flush();
                        super::run(&super::Options {
                            detach: false,
                            dry_run: false,
                            report: false,
                            running: true,
                            objects: Vec::new(),
                        });
                    }
                    Err(errno) => {
                        if let Ok(mut c) = n.lock() {
                            c.unopened += 1;
                        }
                        println!(
                            "failed: the kernel could not open a wanted file for this process: {}",
                            describe(&io::Error::from_raw_os_error(errno))
                        );
                    }
                }
            }
            if last.elapsed() >= Duration::from_secs(60) {
                last = Instant::now();
                if let Ok(c) = n.lock() {
                    println!(
                        "serve: {} attached, {} nothing, {} failed, {} not opened, {} from the cache, {} overflows",
                        c.attached, c.nothing, c.failed, c.unopened, c.cache_hits, c.overflows
                    );
                }
            }
            let _ = io::stdout().flush();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section of an entry read back, or `None`.
    fn section(a: Option<Answer>) -> Option<(Vec<u8>, u64, String)> {
        match a? {
            Answer::Section { bytes, addr, kind } => Some((bytes, addr, kind)),
            Answer::Nothing(_) => None,
        }
    }

    #[test]
    fn cache_entries_round_trip() {
        let s = Answer::Section {
            bytes: vec![1, 2, 3],
            addr: 0x1234,
            kind: "synthesized".into(),
        };
        let e = encode(&s);
        assert_eq!(
            section(decode(&e)),
            Some((vec![1, 2, 3], 0x1234, "cached".to_string()))
        );
        let why = match decode(&encode(&Answer::Nothing("no .eh_frame".into()))) {
            Some(Answer::Nothing(why)) => why,
            _ => String::new(),
        };
        assert_eq!(why, "no .eh_frame (cached)");
        // Torn or foreign files are not entries.
        assert!(decode(b"").is_none());
        assert!(decode(e.get(..12).unwrap_or_default()).is_none());
        assert!(decode(b"SFSYNC1\0\0\0\0\0\0\0\0\0\x01").is_none());
        assert!(decode(b"SFSYNC1\0\0\0\0\0\0\0\0\0\x07abc").is_none());
    }

    #[test]
    fn a_full_cache_loses_its_oldest_entries() -> io::Result<()> {
        let dir =
            std::env::temp_dir().join(format!("sframe-synth-cache-test.{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir)?;
        let c = Cache {
            dir: dir.clone(),
            max: 3 * 1024,
            writes: AtomicU32::new(0),
        };
        let a = Answer::Section {
            bytes: vec![0; 1000],
            addr: 0,
            kind: String::new(),
        };
        for i in 0..5 {
            c.put(&format!("k{i}"), &a);
            std::thread::sleep(Duration::from_millis(20));
        }
        c.trim();
        let left: Vec<_> = (0..5)
            .filter(|i| c.get(&format!("k{i}")).is_some())
            .collect();
        assert_eq!(left, [2, 3, 4]);
        fs::remove_dir_all(&dir)
    }
}
