// SPDX-License-Identifier: GPL-2.0

//! What the synthesizer needs from an x86_64 ELF object, read with `object`
//! from untrusted bytes: `.eh_frame` (from the section headers, or through
//! `PT_GNU_EH_FRAME` when they are stripped), the base addresses its
//! pointers may use, the executable segments, the GNU build ID, and whether
//! the object already carries SFrame (and where: [`read_loadable`]).

use gimli::{BaseAddresses, EhFrameHdr, LittleEndian as GimliLe, Pointer};
use object::elf;
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader, SectionHeader};
use object::{LittleEndian, Object, ObjectSection};

use crate::arch::Arch;
use crate::cfi::EhFrameInput;
use crate::Error;

/// The parts of an ELF object the synthesizer reads.
#[derive(Clone, Debug)]
pub struct ElfObject<'a> {
    /// Descriptor of the `NT_GNU_BUILD_ID` note, if any.
    pub build_id: Option<&'a [u8]>,
    /// The object has a `.sframe` section or a `PT_GNU_SFRAME` segment.
    pub has_sframe: bool,
    /// `.eh_frame` and its bases. Found through `PT_GNU_EH_FRAME`, its
    /// data runs to the end of the segment's file data.
    pub eh_frame: EhFrameInput<'a>,
    /// Size of the `.eh_frame` section; `None` if found through
    /// `PT_GNU_EH_FRAME` (no section headers).
    pub eh_frame_size: Option<u64>,
    /// Size of `.eh_frame_hdr` (0 if absent).
    pub eh_frame_hdr_size: u64,
    /// Executable `PT_LOAD` segments: (start, end) virtual addresses.
    pub exec_segments: Vec<(u64, u64)>,
}

impl ElfObject<'_> {
    /// The build ID in lower-case hex, as in `/usr/lib/debug/.build-id/`.
    pub fn build_id_hex(&self) -> Option<String> {
        self.build_id
            .map(|b| b.iter().map(|x| format!("{x:02x}")).collect())
    }

    /// Bytes in executable `PT_LOAD` segments.
    pub fn exec_bytes(&self) -> u64 {
        self.exec_segments
            .iter()
            .fold(0u64, |n, &(s, e)| n.saturating_add(e.saturating_sub(s)))
    }
}

/// Find `.eh_frame` through `PT_GNU_EH_FRAME`: `.eh_frame_hdr` points at
/// its start; it runs at most to the end of the segment's file data (gimli
/// stops at the zero terminator).
fn eh_frame_from_hdr<'a>(
    arch: Arch,
    data: &'a [u8],
    phdrs: &[elf::ProgramHeader64<LittleEndian>],
    hdr: &elf::ProgramHeader64<LittleEndian>,
) -> Result<(EhFrameInput<'a>, u64), Error> {
    let e = LittleEndian;
    let bad = |what: &str| Error::EhFrameHdr(what.to_string());
    let hdr_addr = hdr.p_vaddr(e);
    let hdr_data = hdr
        .data(e, data)
        .map_err(|()| bad("PT_GNU_EH_FRAME lies outside the file"))?;
    let bases = BaseAddresses::default().set_eh_frame_hdr(hdr_addr);
    let parsed = EhFrameHdr::new(hdr_data, GimliLe)
        .parse(&bases, 8)
        .map_err(|err| Error::EhFrameHdr(err.to_string()))?;
    let addr = match parsed.eh_frame_ptr() {
        Pointer::Direct(a) => a,
        Pointer::Indirect(_) => return Err(bad("indirect eh_frame_ptr")),
    };
    for ph in phdrs {
        if ph.p_type(e) != elf::PT_LOAD {
            continue;
        }
        let (start, filesz, off) = (ph.p_vaddr(e), ph.p_filesz(e), ph.p_offset(e));
        let Some(rel) = addr.checked_sub(start).filter(|&r| r < filesz) else {
            continue;
        };
        let from = off.checked_add(rel).and_then(|o| usize::try_from(o).ok());
        let to = off
            .checked_add(filesz)
            .and_then(|o| usize::try_from(o).ok());
        let slice = match (from, to) {
            (Some(f), Some(t)) => data.get(f..t),
            _ => None,
        }
        .ok_or_else(|| bad("eh_frame_ptr points outside the file"))?;
        let input = EhFrameInput {
            arch,
            data: slice,
            addr,
            eh_frame_hdr: Some(hdr_addr),
            text: None,
            got: None,
        };
        return Ok((input, hdr.p_memsz(e)));
    }
    Err(bad("eh_frame_ptr is in no PT_LOAD segment"))
}

/// Parse `data` as a 64-bit little-endian x86_64 or AArch64 executable or
/// shared object.
fn parse(data: &[u8]) -> Result<(ElfFile64<'_, LittleEndian>, Arch), Error> {
    let e = LittleEndian;
    let file = ElfFile64::<LittleEndian>::parse(data).map_err(|err| Error::Elf(err.to_string()))?;
    let header = file.elf_header();
    let arch = match header.e_machine(e) {
        elf::EM_X86_64 => Arch::X86_64,
        elf::EM_AARCH64 => Arch::Aarch64,
        _ => return Err(Error::Machine),
    };
    let ty = header.e_type(e);
    if ty != elf::ET_DYN && ty != elf::ET_EXEC {
        return Err(Error::NotLoadable);
    }
    Ok((file, arch))
}

/// The executable `PT_LOAD` segment of `ph`, as (start, end) virtual
/// addresses, if it is one.
fn exec_segment(ph: &elf::ProgramHeader64<LittleEndian>) -> Result<Option<(u64, u64)>, Error> {
    let e = LittleEndian;
    if ph.p_type(e) != elf::PT_LOAD || ph.p_flags(e).0 & elf::PF_X.0 == 0 {
        return Ok(None);
    }
    let start = ph.p_vaddr(e);
    let end = start
        .checked_add(ph.p_memsz(e))
        .ok_or_else(|| Error::Elf("PT_LOAD segment ends past 2^64".into()))?;
    Ok(Some((start, end)))
}

/// An object's own SFrame section, as its producer wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnSframe<'a> {
    /// The section's bytes in the file.
    pub data: &'a [u8],
    /// Its link-time address (`sh_addr`, or `PT_GNU_SFRAME`'s `p_vaddr`):
    /// what its own addresses are relative to.
    pub addr: u64,
}

/// What attaching a section to an object's file needs to know before
/// choosing between the object's own SFrame and a synthesized section.
#[derive(Clone, Debug)]
pub struct Loadable<'a> {
    /// The object's architecture.
    pub arch: Arch,
    /// Executable `PT_LOAD` segments: (start, end) virtual addresses. The
    /// kernel takes a file with exactly one.
    pub exec_segments: Vec<(u64, u64)>,
    /// The object's own SFrame section, if it has a non-empty one.
    pub sframe: Option<OwnSframe<'a>>,
}

/// Parse `data` as a 64-bit little-endian x86_64 or AArch64 executable
/// or shared object and find its executable segments and its own SFrame section:
/// the `.sframe` (or `SHT_GNU_SFRAME`) section, whose size is exact, else
/// `PT_GNU_SFRAME` (no section headers), whose size may include padding
/// (ld 2.40's runs to the end of its `PT_LOAD`).
pub fn read_loadable(data: &[u8]) -> Result<Loadable<'_>, Error> {
    let e = LittleEndian;
    let (file, arch) = parse(data)?;
    let phdrs = file.elf_program_headers();
    let mut exec_segments = Vec::new();
    let mut from_phdr = None;
    for ph in phdrs {
        if let Some(seg) = exec_segment(ph)? {
            exec_segments.push(seg);
        } else if ph.p_type(e) == elf::PT_GNU_SFRAME {
            let bytes = ph
                .data(e, data)
                .map_err(|()| Error::Elf("PT_GNU_SFRAME lies outside the file".into()))?;
            from_phdr = Some(OwnSframe {
                data: bytes,
                addr: ph.p_vaddr(e),
            });
        }
    }
    let mut from_section = None;
    for s in file.sections() {
        let named = s.name() == Ok(".sframe");
        if named || s.elf_section_header().sh_type(e) == elf::SHT_GNU_SFRAME {
            let bytes = s
                .data()
                .map_err(|err| Error::Elf(format!(".sframe: {err}")))?;
            from_section = Some(OwnSframe {
                data: bytes,
                addr: s.address(),
            });
            break;
        }
    }
    let non_empty = |s: &OwnSframe<'_>| !s.data.is_empty();
    let sframe = from_section
        .filter(non_empty)
        .or(from_phdr.filter(non_empty));
    Ok(Loadable {
        arch,
        exec_segments,
        sframe,
    })
}

/// Parse `data` as a 64-bit little-endian x86_64 or AArch64 executable
/// or shared object and collect what the synthesizer needs.
pub fn read_elf(data: &[u8]) -> Result<ElfObject<'_>, Error> {
    let e = LittleEndian;
    let (file, arch) = parse(data)?;
    let build_id = file
        .build_id()
        .map_err(|err| Error::Elf(format!("notes: {err}")))?;
    let phdrs = file.elf_program_headers();

    let mut has_sframe = false;
    let mut exec_segments = Vec::new();
    let mut eh_hdr_phdr = None;
    for ph in phdrs {
        let t = ph.p_type(e);
        if t == elf::PT_GNU_SFRAME {
            has_sframe = true;
        } else if t == elf::PT_GNU_EH_FRAME {
            eh_hdr_phdr = Some(ph);
        } else if let Some(seg) = exec_segment(ph)? {
            exec_segments.push(seg);
        }
    }
    for s in file.elf_section_table().iter() {
        if s.sh_type(e) == elf::SHT_GNU_SFRAME {
            has_sframe = true;
        }
    }
    let addr_of = |name: &str| file.section_by_name(name).map(|s| s.address());
    if addr_of(".sframe").is_some() {
        has_sframe = true;
    }

    let (eh_frame, eh_frame_size, eh_frame_hdr_size) = match file.section_by_name(".eh_frame") {
        Some(s) => {
            let bytes = s
                .data()
                .map_err(|err| Error::Elf(format!(".eh_frame: {err}")))?;
            if bytes.is_empty() {
                return Err(Error::NoEhFrame);
            }
            let hdr = file.section_by_name(".eh_frame_hdr");
            let input = EhFrameInput {
                arch,
                data: bytes,
                addr: s.address(),
                eh_frame_hdr: hdr.as_ref().map(|h| h.address()),
                text: addr_of(".text"),
                got: addr_of(".got"),
            };
            (input, Some(s.size()), hdr.map_or(0, |h| h.size()))
        }
        None => match eh_hdr_phdr {
            Some(ph) => {
                let (input, hdr_size) = eh_frame_from_hdr(arch, data, phdrs, ph)?;
                (input, None, hdr_size)
            }
            None => return Err(Error::NoEhFrame),
        },
    };
    Ok(ElfObject {
        build_id,
        has_sframe,
        eh_frame,
        eh_frame_size,
        eh_frame_hdr_size,
        exec_segments,
    })
}
