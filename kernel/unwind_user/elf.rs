// SPDX-License-Identifier: GPL-2.0

//! What the program headers of an ELF file of this architecture say the
//! unwinder needs: where its code is, and its own SFrame section (`PT_GNU_SFRAME`), if any.
//! The file is untrusted: every field is checked before use.

use kernel::{
    alloc::KVec,
    bindings,
    error::code::{EAGAIN, ENOEXEC},
    prelude::*,
    transmute::{AsBytes, FromBytes},
};

/// `PT_GNU_SFRAME`, which `include/uapi/linux/elf.h` does not have yet.
const PT_GNU_SFRAME: u32 = 0x6474_e554;

/// Most program headers read: a real file has about a dozen.
const MAX_PHDRS: usize = 128;

/// An ELF header or program header, read from a file as bytes.
///
/// # Invariants
///
/// `T` is `elf64_hdr` or `elf64_phdr`, whose fields are all integers (or
/// arrays of them) and take all of its bytes (checked at build time):
/// every bit pattern is a value, and no byte is padding.
#[repr(transparent)]
#[derive(Clone, Copy, Default)]
struct Raw<T>(T);

const _: () = {
    // The fields take all of the structs' bytes: no padding.
    let h = bindings::elf64_hdr {
        e_ident: [0; 16],
        e_type: 0,
        e_machine: 0,
        e_version: 0,
        e_entry: 0,
        e_phoff: 0,
        e_shoff: 0,
        e_flags: 0,
        e_ehsize: 0,
        e_phentsize: 0,
        e_phnum: 0,
        e_shentsize: 0,
        e_shnum: 0,
        e_shstrndx: 0,
    };
    assert!(
        size_of::<bindings::elf64_hdr>()
            == size_of_val(&h.e_ident)
                + size_of_val(&h.e_type)
                + size_of_val(&h.e_machine)
                + size_of_val(&h.e_version)
                + size_of_val(&h.e_entry)
                + size_of_val(&h.e_phoff)
                + size_of_val(&h.e_shoff)
                + size_of_val(&h.e_flags)
                + size_of_val(&h.e_ehsize)
                + size_of_val(&h.e_phentsize)
                + size_of_val(&h.e_phnum)
                + size_of_val(&h.e_shentsize)
                + size_of_val(&h.e_shnum)
                + size_of_val(&h.e_shstrndx)
    );
    let p = bindings::elf64_phdr {
        p_type: 0,
        p_flags: 0,
        p_offset: 0,
        p_vaddr: 0,
        p_paddr: 0,
        p_filesz: 0,
        p_memsz: 0,
        p_align: 0,
    };
    assert!(
        size_of::<bindings::elf64_phdr>()
            == size_of_val(&p.p_type)
                + size_of_val(&p.p_flags)
                + size_of_val(&p.p_offset)
                + size_of_val(&p.p_vaddr)
                + size_of_val(&p.p_paddr)
                + size_of_val(&p.p_filesz)
                + size_of_val(&p.p_memsz)
                + size_of_val(&p.p_align)
    );
};
// The fields are read as the file stores them: little-endian, as the
// identification bytes require (ELFDATA2LSB).
const _: () = assert!(cfg!(target_endian = "little"));
// SAFETY: Integer fields (and an array of bytes) only, and no padding, as
// checked above.
unsafe impl FromBytes for Raw<bindings::elf64_hdr> {}
// SAFETY: As above.
unsafe impl AsBytes for Raw<bindings::elf64_hdr> {}
// SAFETY: As above.
unsafe impl FromBytes for Raw<bindings::elf64_phdr> {}

/// A segment of an ELF file: where it is, in the file and at link time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub(crate) vaddr: u64,
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

impl Segment {
    /// The segment of program header `ph`; `ENOEXEC` if it ends past the
    /// end of the address or offset space.
    fn of(ph: &bindings::elf64_phdr) -> Result<Segment> {
        let seg = Segment {
            offset: ph.p_offset,
            vaddr: ph.p_vaddr,
            size: ph.p_filesz,
        };
        if seg.vaddr.checked_add(seg.size).is_none() || seg.offset.checked_add(seg.size).is_none() {
            return Err(ENOEXEC);
        }
        Ok(seg)
    }

    /// Where the segment is in a mapping of `[start, end)` that maps the
    /// file from `offset`, and the load bias (what its link-time addresses
    /// are off by there); `None` unless the mapping holds all of it.
    pub(crate) fn placed(&self, start: usize, end: usize, offset: u64) -> Option<Placed> {
        let into = self.offset.checked_sub(offset)?;
        let text_start = (start as u64).checked_add(into)?;
        let text_end = text_start.checked_add(self.size)?;
        if text_end > end as u64 {
            return None;
        }
        Some(Placed {
            start: usize::try_from(text_start).ok()?,
            end: usize::try_from(text_end).ok()?,
            bias: text_start.wrapping_sub(self.vaddr),
        })
    }
}

/// A segment as a mapping places it ([`Segment::placed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) bias: u64,
}

/// What the program headers of an ELF file say the unwinder needs.
pub(crate) struct ElfLayout {
    /// Its one executable `PT_LOAD` segment: its text.
    pub(crate) text: Segment,
    /// Its `PT_GNU_SFRAME` segment, if it has one.
    pub(crate) sframe: Option<Segment>,
}

/// The layout of an [`EM_NATIVE`] ELF64 executable or shared object whose bytes
/// `read(buf, pos)` reads; `ENOEXEC` for anything else, or for one whose
/// executable code is not one `PT_LOAD` segment.
pub(crate) fn layout(read: impl Fn(&mut [u8], u64) -> Result) -> Result<ElfLayout> {
    let mut ehdr = Raw::<bindings::elf64_hdr>::default();
    read(ehdr.as_bytes_mut(), 0)?;
    let len = phdrs_len(&ehdr.0)?;
    // All of them in one read: at most 7 KiB.
    let mut phdrs = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    read(&mut phdrs, ehdr.0.e_phoff)?;
    parse(&phdrs)
}

/// [`layout`] of a file whose program headers lie in `bytes`, its first
/// bytes (a page the page cache holds): read in place, no allocation.
pub(crate) fn layout_in(bytes: &[u8]) -> Result<ElfLayout> {
    let ehdr = bytes
        .get(..size_of::<bindings::elf64_hdr>())
        .and_then(Raw::<bindings::elf64_hdr>::from_bytes_copy)
        .ok_or(EAGAIN)?;
    let len = phdrs_len(&ehdr.0)?;
    let start = usize::try_from(ehdr.0.e_phoff).map_err(|_| EAGAIN)?;
    parse(bytes.get(start..start.saturating_add(len)).ok_or(EAGAIN)?)
}

/// The ELF machine of the code the unwinder describes: the kernel's own
/// (the 64-bit one; compat tasks are not unwound with sections).
#[cfg(target_arch = "x86_64")]
const EM_NATIVE: u32 = bindings::EM_X86_64;
#[cfg(target_arch = "aarch64")]
const EM_NATIVE: u32 = bindings::EM_AARCH64;

/// How many bytes of program headers the ELF header `e` says its file has;
/// `ENOEXEC` unless it is an [`EM_NATIVE`] ELF64 executable or shared object
/// with at most [`MAX_PHDRS`] of them.
fn phdrs_len(e: &bindings::elf64_hdr) -> Result<usize> {
    let ident_ok = e.e_ident.get(..4) == bindings::ELFMAG.get(..4)
        && e.e_ident.get(bindings::EI_CLASS as usize) == Some(&(bindings::ELFCLASS64 as u8))
        && e.e_ident.get(bindings::EI_DATA as usize) == Some(&(bindings::ELFDATA2LSB as u8));
    let phnum = usize::from(e.e_phnum);
    if !ident_ok
        || !(e.e_type == bindings::ET_EXEC as u16 || e.e_type == bindings::ET_DYN as u16)
        || u32::from(e.e_machine) != EM_NATIVE
        || usize::from(e.e_phentsize) != size_of::<bindings::elf64_phdr>()
        || phnum == 0
        || phnum > MAX_PHDRS
    {
        return Err(ENOEXEC);
    }
    Ok(phnum * size_of::<bindings::elf64_phdr>())
}

/// The layout the program headers `phdrs` describe.
fn parse(phdrs: &[u8]) -> Result<ElfLayout> {
    let page = kernel::page::PAGE_SIZE as u64;
    let (mut text, mut sframe) = (None, None);
    for bytes in phdrs.chunks_exact(size_of::<bindings::elf64_phdr>()) {
        let Raw(ph) = Raw::<bindings::elf64_phdr>::from_bytes_copy(bytes).ok_or(ENOEXEC)?;
        if ph.p_type == PT_GNU_SFRAME {
            sframe = Some(Segment::of(&ph)?);
            continue;
        }
        if ph.p_type != bindings::PT_LOAD || ph.p_flags & bindings::PF_X == 0 {
            continue;
        }
        let seg = Segment::of(&ph)?;
        if text.is_some() || seg.size == 0 || seg.offset % page != seg.vaddr % page {
            return Err(ENOEXEC);
        }
        text = Some(seg);
    }
    Ok(ElfLayout {
        text: text.ok_or(ENOEXEC)?,
        sframe,
    })
}

#[kunit_tests(unwind_user_elf)]
mod tests {
    use super::*;

    #[test]
    fn text_at_its_bias() {
        let (start, end) = (0x7f00_0000_1000, 0x7f00_0000_9000);
        let text = Segment {
            vaddr: 0x21000,
            offset: 0x1000,
            size: 0x7000,
        };
        let placed = |text: Segment| text.placed(start, end, 0x1000);
        // Addresses relative to 0 at link time: the load bias.
        assert_eq!(
            placed(text),
            Some(Placed {
                start: 0x7f00_0000_1000,
                end: 0x7f00_0000_8000,
                bias: 0x7f00_0000_1000 - 0x21000,
            })
        );
        // Text past the mapping's end, or before its start: not placed.
        assert!(placed(Segment {
            size: 0x9000,
            ..text
        })
        .is_none());
        assert!(placed(Segment { offset: 0, ..text }).is_none());
    }
}
