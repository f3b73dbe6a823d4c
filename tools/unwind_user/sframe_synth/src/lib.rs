// SPDX-License-Identifier: GPL-2.0

//! Synthesize an SFrame (version 3) section from the `.eh_frame` of an
//! x86_64 or AArch64 ELF object built without SFrame, so that the kernel's
//! SFrame unwinder can walk through libraries such as Debian 12's libc.
//!
//! - [`elf::read_elf`] finds `.eh_frame` and what else is needed in the
//!   object (untrusted input: every read is checked);
//! - [`cfi::read_eh_frame`] evaluates every FDE with gimli and keeps the
//!   functions whose every row SFrame can express exactly;
//! - [`encode::encode`] checks the functions and writes the SFrame V3
//!   section with `sframe_encode`, the encoder the decoder's tests use.
//!
//! **Address convention.** The section is encoded as if it were located at
//! address 0 of the object's link-time address space: decoded with
//! `sframe::Section::new(bytes, len, 0)`, function start addresses are the
//! object's link-time virtual addresses (`st_value`, FDE `pc_begin`). At run
//! time the section is decoded as if it sat at the object's load bias.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::as_conversions
    )
)]

pub mod arch;
pub mod cfi;
pub mod elf;
pub mod encode;
pub mod gaps;

use std::fmt;

use std::collections::BTreeSet;

use arch::Arch;
use cfi::{Cfi, CfiError, Described, LeftOut, Reason};
use elf::ElfObject;
use encode::{EncodeError, Function, Rule};

/// Why an object could not be synthesized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Not a readable ELF file (`object`'s message).
    Elf(String),
    /// Neither an x86_64 nor an AArch64 object.
    Machine,
    /// Neither an executable nor a shared object (relocatable objects have
    /// no final addresses).
    NotLoadable,
    /// No `.eh_frame` section and no `PT_GNU_EH_FRAME` segment.
    NoEhFrame,
    /// `PT_GNU_EH_FRAME` is unusable.
    EhFrameHdr(String),
    /// `.eh_frame` cannot be walked.
    Cfi(CfiError),
    /// The encoder refused the functions (a bug of this tool).
    Encode(EncodeError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Elf(m) => write!(f, "not a readable ELF object: {m}"),
            Error::Machine => write!(f, "neither an x86_64 nor an AArch64 ELF object"),
            Error::NotLoadable => write!(f, "not an executable or shared object"),
            Error::NoEhFrame => write!(f, "no .eh_frame (nor PT_GNU_EH_FRAME)"),
            Error::EhFrameHdr(m) => write!(f, "PT_GNU_EH_FRAME: {m}"),
            Error::Cfi(e) => write!(f, "{e}"),
            Error::Encode(e) => write!(f, "encoding: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<CfiError> for Error {
    fn from(e: CfiError) -> Self {
        Error::Cfi(e)
    }
}

impl From<EncodeError> for Error {
    fn from(e: EncodeError) -> Self {
        Error::Encode(e)
    }
}

/// Coverage figures of one synthesized section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// FDEs in `.eh_frame`.
    pub fdes: usize,
    /// FDEs encoded whole.
    pub encoded: usize,
    /// Functions (SFrame FDEs) written: one per encoded FDE, two for a
    /// `.plt` FDE (PLT0 and the PC-mask entries).
    pub functions: usize,
    /// Of which PC-mask functions (`.plt` entries).
    pub pc_mask: usize,
    /// FREs written.
    pub fres: usize,
    /// Encoded functions with an outermost row (return address undefined).
    pub outermost: usize,
    /// Encoded signal trampolines.
    pub signal_frames: usize,
    /// Bytes of code covered by all FDEs.
    pub fde_bytes: u64,
    /// Bytes of code covered by encoded functions.
    pub encoded_bytes: u64,
    /// Bytes of executable `PT_LOAD` segments.
    pub exec_bytes: u64,
    /// Size of the SFrame section.
    pub section_size: usize,
    /// Size of `.eh_frame`, if known.
    pub eh_frame_size: Option<u64>,
    /// Size of `.eh_frame_hdr`.
    pub eh_frame_hdr_size: u64,
    /// Per reason: (functions, bytes) left out, in [`Reason::ALL`] order,
    /// reasons that left nothing out omitted.
    pub left_out: Vec<(Reason, usize, u64)>,
}

/// `part` over `whole` in percent (0 when `whole` is 0).
// Figures of a report: the precision lost above 2^53 does not matter.
#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    100.0 * part as f64 / whole as f64
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "  FDEs {}, functions encoded {} ({:.2}%), left out {}; {} SFrame FDEs ({} PC-mask), {} FREs, {} outermost, {} signal frames",
            self.fdes,
            self.encoded,
            percent(count(self.encoded), count(self.fdes)),
            self.fdes.saturating_sub(self.encoded),
            self.functions,
            self.pc_mask,
            self.fres,
            self.outermost,
            self.signal_frames,
        )?;
        writeln!(
            f,
            "  text bytes encoded {}: {:.2}% of the {} covered by FDEs, {:.2}% of the {} in executable PT_LOAD",
            self.encoded_bytes,
            percent(self.encoded_bytes, self.fde_bytes),
            self.fde_bytes,
            percent(self.encoded_bytes, self.exec_bytes),
            self.exec_bytes,
        )?;
        let size = count(self.section_size);
        match self.eh_frame_size {
            Some(eh) => {
                let both = eh.saturating_add(self.eh_frame_hdr_size);
                writeln!(
                    f,
                    "  .sframe {size} bytes = {:.1}% of .eh_frame ({eh} bytes), {:.1}% of .eh_frame + .eh_frame_hdr ({both} bytes)",
                    percent(size, eh),
                    percent(size, both),
                )?;
            }
            None => writeln!(
                f,
                "  .sframe {size} bytes (.eh_frame size unknown: no section headers)"
            )?,
        }
        if self.left_out.is_empty() {
            writeln!(f, "  left out: nothing")
        } else {
            let parts: Vec<String> = self
                .left_out
                .iter()
                .map(|(r, n, b)| format!("{r} {n} ({b} bytes)"))
                .collect();
            writeln!(f, "  left out: {}", parts.join(", "))
        }
    }
}

/// A synthesized section and what went into it.
#[derive(Clone, Debug)]
pub struct Synthesis {
    /// The SFrame V3 section, encoded as if located at address 0.
    pub section: Vec<u8>,
    /// The functions encoded, sorted by start address.
    pub functions: Vec<Function>,
    /// The FDEs (or parts of FDEs) left out, and why.
    pub left_out: Vec<LeftOut>,
    /// Coverage figures.
    pub stats: Stats,
}

/// Whether `[start, start + size)` lies inside one of `segments`.
fn inside(segments: &[(u64, u64)], start: u64, size: u32) -> bool {
    let Some(end) = start.checked_add(u64::from(size)) else {
        return false;
    };
    segments.iter().any(|&(s, e)| start >= s && end <= e)
}

/// Keep the functions of `cfi` that lie in executable segments and do not
/// overlap one kept before (in address order), and encode them.
pub fn synthesize(obj: &ElfObject<'_>) -> Result<Synthesis, Error> {
    let Cfi {
        fdes,
        mut functions,
        mut left_out,
    } = cfi::read_eh_frame(&obj.eh_frame)?;
    functions.sort_by_key(|d| d.function.start);
    let mut kept: Vec<Function> = Vec::with_capacity(functions.len());
    for Described { fde, function: f } in functions {
        let reason = if !inside(&obj.exec_segments, f.start, f.size) {
            Some(Reason::OutsideText)
        } else if kept
            .last()
            .is_some_and(|p| f.start < p.start.saturating_add(u64::from(p.size)))
        {
            Some(Reason::Overlap)
        } else {
            None
        };
        match reason {
            Some(reason) => left_out.push(LeftOut {
                fde,
                start: f.start,
                size: u64::from(f.size),
                reason,
            }),
            None => kept.push(f),
        }
    }
    let section = encode::encode(obj.eh_frame.arch, &kept)?;

    let encoded_bytes = kept
        .iter()
        .fold(0u64, |n, f| n.saturating_add(u64::from(f.size)));
    let left_bytes = left_out.iter().fold(0u64, |n, l| n.saturating_add(l.size));
    let not_whole: BTreeSet<usize> = left_out.iter().map(|l| l.fde).collect();
    let stats = Stats {
        fdes,
        encoded: fdes.saturating_sub(not_whole.len()),
        functions: kept.len(),
        pc_mask: kept.iter().filter(|f| f.rep_size.is_some()).count(),
        fres: kept
            .iter()
            .fold(0usize, |n, f| n.saturating_add(f.fres.len())),
        outermost: kept
            .iter()
            .filter(|f| f.fres.iter().any(|r| r.rule == Rule::Outermost))
            .count(),
        signal_frames: kept.iter().filter(|f| f.signal_frame).count(),
        fde_bytes: encoded_bytes.saturating_add(left_bytes),
        encoded_bytes,
        exec_bytes: obj.exec_bytes(),
        section_size: section.len(),
        eh_frame_size: obj.eh_frame_size,
        eh_frame_hdr_size: obj.eh_frame_hdr_size,
        left_out: Reason::ALL
            .iter()
            .filter_map(|&r| {
                let (n, b) = left_out
                    .iter()
                    .filter(|l| l.reason == r)
                    .fold((0usize, 0u64), |(n, b), l| {
                        (n.saturating_add(1), b.saturating_add(l.size))
                    });
                (n > 0).then_some((r, n, b))
            })
            .collect(),
    };
    Ok(Synthesis {
        section,
        functions: kept,
        left_out,
        stats,
    })
}

/// The largest section the kernel takes (`E2BIG` past it).
pub const MAX_SECTION_SIZE: usize = 64 << 20;

/// Why the kernel would refuse a section for an object's file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SectionError {
    /// Larger than [`MAX_SECTION_SIZE`].
    TooLarge(usize),
    /// The section is not for this architecture (another ABI, or another
    /// fixed return address offset than its ABI's).
    OtherAbi(Arch),
    /// The decoder refuses it (`sframe::Error`'s name).
    Decode(&'static str),
    /// A function lies outside the executable segment.
    Outside {
        /// Its start address.
        start: u64,
        /// Its end address.
        end: u64,
    },
}

impl fmt::Display for SectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SectionError::TooLarge(n) => write!(
                f,
                "{n} bytes, over the kernel's {} MiB",
                MAX_SECTION_SIZE >> 20
            ),
            SectionError::OtherAbi(arch) => write!(f, "not a section for {arch}"),
            SectionError::Decode(e) => write!(f, "malformed or unsupported: {e}"),
            SectionError::Outside { start, end } => write!(
                f,
                "function {start:#x}..{end:#x} outside the executable segment"
            ),
        }
    }
}

impl std::error::Error for SectionError {}

/// Check `section` as the kernel checks a section attached to a file
/// (`UNWIND_USER_FILE_ATTACH`), so that a section it would refuse is known
/// before the system call: decoded at link-time address `addr` by the
/// kernel's own decoder, for `arch`'s ABI (on AMD64 with the return
/// address at CFA - 8), every FDE and FRE valid (`validate()`), and every
/// function inside `text`, the object's executable segment. Returns the
/// section's header.
pub fn check_section(
    arch: Arch,
    section: &[u8],
    addr: u64,
    text: (u64, u64),
) -> Result<sframe::Header, SectionError> {
    let len = section.len();
    let len32 = u32::try_from(len)
        .ok()
        .filter(|_| len <= MAX_SECTION_SIZE)
        .ok_or(SectionError::TooLarge(len))?;
    let decode = |e: sframe::Error| SectionError::Decode(e.name());
    let mut sec = sframe::Section::new(section, len32, addr).map_err(decode)?;
    let header = *sec.header();
    if header.abi != arch.abi() || header.fixed_ra_offset() != arch.fixed_ra_offset() {
        return Err(SectionError::OtherAbi(arch));
    }
    sec.validate().map_err(decode)?;
    for i in 0..header.num_fdes {
        let fde = sec.fde(i).map_err(decode)?;
        let (start, end) = (fde.func_start, fde.func_end());
        if start < text.0 || end > text.1 {
            return Err(SectionError::Outside { start, end });
        }
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfi::tests::eh_frame;
    use cfi::EhFrameInput;
    use gimli::write::CallFrameInstruction as I;

    fn object(eh: &[u8], exec: Vec<(u64, u64)>) -> ElfObject<'_> {
        ElfObject {
            build_id: None,
            has_sframe: false,
            eh_frame: EhFrameInput {
                arch: Arch::X86_64,
                data: eh,
                addr: 0x8000,
                eh_frame_hdr: None,
                text: None,
                got: None,
            },
            eh_frame_size: Some(eh.len() as u64),
            eh_frame_hdr_size: 0,
            exec_segments: exec,
        }
    }

    #[test]
    fn overlapping_and_stray_fdes_are_left_out() {
        let push = || vec![(1, I::CfaOffset(16))];
        let eh = eh_frame(
            vec![
                (0x1100, 0x20, push()),
                (0x1000, 0x20, push()),
                // Starts inside the one before (in address order).
                (0x1010, 0x20, push()),
                // A duplicate.
                (0x1100, 0x20, push()),
                // Ends past the executable segment; outside it.
                (0x1ff0, 0x20, push()),
                (0x9000, 0x20, push()),
            ],
            vec![],
            vec![],
        );
        let syn = synthesize(&object(&eh, vec![(0x1000, 0x2000)])).unwrap();
        let kept: Vec<u64> = syn.functions.iter().map(|f| f.start).collect();
        assert_eq!(kept, [0x1000, 0x1100]);
        let mut left: Vec<(u64, Reason)> =
            syn.left_out.iter().map(|l| (l.start, l.reason)).collect();
        left.sort();
        assert_eq!(
            left,
            [
                (0x1010, Reason::Overlap),
                (0x1100, Reason::Overlap),
                (0x1ff0, Reason::OutsideText),
                (0x9000, Reason::OutsideText),
            ]
        );
        let s = &syn.stats;
        assert_eq!((s.fdes, s.encoded, s.fres), (6, 2, 4));
        assert_eq!(
            (s.encoded_bytes, s.fde_bytes, s.exec_bytes),
            (0x40, 0xc0, 0x1000)
        );
        assert_eq!(
            s.left_out,
            [(Reason::Overlap, 2, 0x40), (Reason::OutsideText, 2, 0x40)]
        );
        // What was kept decodes, at link-time addresses.
        let mut sec = sframe::Section::new(&syn.section[..], syn.section.len() as u32, 0).unwrap();
        sec.validate().unwrap();
        assert_eq!(sec.find(0x1001).unwrap().cfa.offset, 16);
        assert_eq!(sec.find(0x1020), Err(sframe::Error::NotCovered));
        let report = s.to_string();
        assert!(report.contains("functions encoded 2 (33.33%)"), "{report}");
        assert!(
            report.contains(
                "overlaps another fde 2 (64 bytes), outside executable segments 2 (64 bytes)"
            ),
            "{report}"
        );
    }
}
