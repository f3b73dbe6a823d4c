// SPDX-License-Identifier: GPL-2.0

//! Test helpers: a small ELF64 reader, the committed corpus and renderers of
//! the decoder's answers in the formats of `objdump --sframe` and
//! `llvm-readelf --sframe`. (Hand-made sections are written with
//! `sframe_encode`.)

#![allow(dead_code)]

use sframe::{
    Base, CfaRule, Fde, FdeType, FreType, Header, PcType, RawFre, RegRule, Row, Section, Version,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where the committed corpus lives.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// One corpus binary and its oracle dumps.
pub struct CorpusFile {
    pub name: String,
    pub elf: Vec<u8>,
    pub objdump: Option<String>,
    pub llvm: Option<String>,
    /// libsframe's sframe_find_fre answers (tests/corpus/findfre.c).
    pub libsframe: Option<String>,
}

/// All corpus binaries, sorted by name.
pub fn corpus() -> Vec<CorpusFile> {
    let dir = corpus_dir();
    let mut names: Vec<String> = std::fs::read_dir(dir.join("bin"))
        .expect("tests/corpus/bin")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "empty corpus");
    names
        .into_iter()
        .map(|name| {
            let elf = std::fs::read(dir.join("bin").join(&name)).unwrap();
            let rd = |ext: &str| {
                std::fs::read_to_string(dir.join("dump").join(format!("{name}.{ext}"))).ok()
            };
            CorpusFile {
                objdump: rd("objdump"),
                llvm: rd("llvm-readelf"),
                libsframe: rd("libsframe"),
                name,
                elf,
            }
        })
        .collect()
}

/// A section found in an ELF file.
pub struct ElfSection<'a> {
    pub addr: u64,
    pub bytes: &'a [u8],
}

fn rd<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    b[off..off + N].try_into().unwrap()
}
fn u16le(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(rd(b, off))
}
fn u32le(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(rd(b, off))
}
fn u64le(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(rd(b, off))
}

/// Find a section by name in a little-endian ELF64 file.
pub fn elf_section<'a>(elf: &'a [u8], want: &str) -> Option<ElfSection<'a>> {
    assert_eq!(&elf[..4], b"\x7fELF", "not ELF");
    assert_eq!(elf[4], 2, "not ELF64");
    assert_eq!(elf[5], 1, "not little-endian");
    let shoff = u64le(elf, 0x28) as usize;
    let shentsize = u16le(elf, 0x3a) as usize;
    let shnum = u16le(elf, 0x3c) as usize;
    let shstrndx = u16le(elf, 0x3e) as usize;
    let sh = |i: usize| shoff + i * shentsize;
    let strtab = u64le(elf, sh(shstrndx) + 0x18) as usize;
    for i in 0..shnum {
        let h = sh(i);
        let name_off = u32le(elf, h) as usize;
        let name = &elf[strtab + name_off..];
        let name = &name[..name.iter().position(|&c| c == 0).unwrap()];
        if name == want.as_bytes() {
            let addr = u64le(elf, h + 0x10);
            let off = u64le(elf, h + 0x18) as usize;
            let size = u64le(elf, h + 0x20) as usize;
            return Some(ElfSection {
                addr,
                bytes: &elf[off..off + size],
            });
        }
    }
    None
}

/// The `.sframe` section of a corpus file.
pub fn sframe_of(f: &CorpusFile) -> ElfSection<'_> {
    elf_section(&f.elf, ".sframe").unwrap_or_else(|| panic!("{}: no .sframe", f.name))
}

pub fn open<'a>(s: &ElfSection<'a>) -> Section<&'a [u8]> {
    Section::new(s.bytes, s.bytes.len() as u32, s.addr).expect("Section::new")
}

/// `reg` as objdump names it.
pub fn base_name(b: Base) -> String {
    match b {
        Base::Sp => "sp".into(),
        Base::Fp => "fp".into(),
        Base::Reg(n) => format!("r{n}"),
    }
}

fn disp(name: &str, off: i32, deref: bool) -> String {
    if deref {
        format!("({name}{off:+})")
    } else {
        format!("{name}{off:+}")
    }
}

/// objdump's CFA column for a row.
pub fn cfa_text(fde: &Fde, c: &CfaRule) -> String {
    match fde.fde_type {
        FdeType::Default => format!("{}+{}", base_name(c.base), c.offset),
        FdeType::Flex => disp(&base_name(c.base), c.offset, c.deref),
    }
}

fn rule_text(r: &RegRule) -> String {
    match *r {
        RegRule::SameValue | RegRule::Undefined => "u".into(),
        RegRule::CfaOffset(o) => format!("c{o:+}"),
        RegRule::Reg {
            base,
            offset,
            deref,
        } => disp(&base_name(base), offset, deref),
    }
}

/// The three cells (CFA, FP, RA) objdump prints for an FRE, or
/// "RA undefined". `dumper` is the binutils generation of the oracle.
pub fn row_cells(hdr: &Header, fde: &Fde, raw: &RawFre, row: &Row) -> String {
    if row.outermost {
        return "RA undefined".into();
    }
    let v1 = hdr.version == Version::V1;
    let (fp, ra) = match fde.fde_type {
        FdeType::Default => {
            // Words: CFA, RA (unless fixed in the header), FP (unless fixed).
            let ra_idx = if hdr.fixed_ra_offset().is_some() {
                None
            } else {
                Some(1)
            };
            let fp_idx = if ra_idx.is_some() { 2 } else { 1 };
            let fp_present = raw.count() > fp_idx || (!v1 && hdr.fixed_fp_offset().is_some());
            let fp = if fp_present {
                rule_text(&row.fp)
            } else {
                "u".into()
            };
            let ra = match ra_idx {
                None if v1 => "u".into(),
                None => "f".into(),
                Some(i) if raw.count() > i && raw.word(i) == Some(0) => "U".into(),
                Some(i) if raw.count() > i => rule_text(&row.ra),
                Some(_) => "u".into(),
            };
            (fp, ra)
        }
        FdeType::Flex => {
            let padded = raw.uword(2) == Some(0);
            let fp_idx = if padded { 3 } else { 4 };
            let fp = if raw.count() > fp_idx {
                rule_text(&row.fp)
            } else {
                "u".into()
            };
            let ra = if raw.count() <= 2 {
                if hdr.fixed_ra_offset().is_some() {
                    "f".into()
                } else {
                    "u".into()
                }
            } else if padded {
                "U".into()
            } else {
                rule_text(&row.ra)
            };
            (fp, ra)
        }
    };
    let ra = format!("{ra}{}", if row.ra_mangled { "[s]" } else { "   " });
    format!("{:<10}{:<10}{:<13}", cfa_text(fde, &row.cfa), fp, ra)
}

/// Render the section like `objdump --sframe` of the binutils generation
/// that produced its version (2.40 for V1, 2.44/2.47 for V2, 2.47 for V3),
/// starting at the "Contents of the SFrame section" line.
pub fn render_objdump(sec: &mut Section<&[u8]>) -> String {
    let hdr = *sec.header();
    let mut o = String::new();
    o.push_str("Contents of the SFrame section .sframe:\n  Header :\n\n");
    writeln!(o, "    Version: SFRAME_VERSION_{}", hdr.version.number()).unwrap();
    let mut flags = hdr.flags;
    if flags == 0 {
        o.push_str("    Flags: NONE\n");
    } else {
        let mut prefix = "Flags: ";
        let mut names = vec![(sframe::F_FDE_SORTED, "SFRAME_F_FDE_SORTED")];
        if hdr.version != Version::V3 {
            names.push((sframe::F_FRAME_POINTER, "SFRAME_F_FRAME_POINTER"));
        }
        names.push((
            sframe::F_FDE_FUNC_START_PCREL,
            "SFRAME_F_FDE_FUNC_START_PCREL",
        ));
        for (bit, name) in names {
            if flags & bit != 0 {
                flags &= !bit;
                writeln!(
                    o,
                    "{:>11}{}{}",
                    prefix,
                    name,
                    if flags != 0 { "," } else { "" }
                )
                .unwrap();
                prefix = " ";
            }
        }
    }
    if hdr.version != Version::V1 {
        if let Some(fp) = hdr.fixed_fp_offset() {
            writeln!(o, "    CFA fixed FP offset: {fp}").unwrap();
        }
        if let Some(ra) = hdr.fixed_ra_offset() {
            writeln!(o, "    CFA fixed RA offset: {ra}").unwrap();
        }
    }
    writeln!(o, "    Num FDEs: {}", hdr.num_fdes).unwrap();
    writeln!(o, "    Num FREs: {}", hdr.num_fres).unwrap();
    o.push_str("\n  Function Index :\n");
    for i in 0..sec.num_fdes() {
        let fde = sec.fde(i).unwrap();
        write!(
            o,
            "\n    func idx [{i}]: pc = {:#x}, size = {} bytes",
            fde.func_start, fde.func_size
        )
        .unwrap();
        if hdr.version == Version::V3 {
            let attrs = format!(
                "{}{}",
                if fde.signal_frame { "S" } else { "" },
                if fde.fde_type == FdeType::Flex {
                    "F"
                } else {
                    ""
                }
            );
            if !attrs.is_empty() {
                write!(o, ", attr = \"{attrs}\"").unwrap();
            }
        }
        if hdr.abi == sframe::Abi::Aarch64LittleEndian && fde.pauth_key_b {
            o.push_str(", pauth = B key");
        }
        let mask = fde.pc_type == PcType::Mask;
        write!(
            o,
            "\n    {:<7}{:<8} {:<10}{:<10}{:<13}",
            "STARTPC",
            if mask { "[m]" } else { "   " },
            "CFA",
            "FP",
            "RA"
        )
        .unwrap();
        sec.for_each_fre(&fde, |raw, row| {
            let vma = if mask {
                u64::from(raw.start)
            } else {
                fde.func_start + u64::from(raw.start)
            };
            write!(o, "\n    {vma:016x}  {}", row_cells(&hdr, &fde, raw, row)).unwrap();
        })
        .unwrap();
        o.push('\n');
    }
    o
}

/// The part of an objdump dump we render.
pub fn objdump_body(dump: &str) -> &str {
    let i = dump
        .find("Contents of the SFrame section")
        .expect("objdump dump without SFrame contents");
    &dump[i..]
}

/// Render the section like `llvm-readelf --sframe` (LLVM 22; V2 only).
pub fn render_llvm(sec: &mut Section<&[u8]>, bytes: &[u8]) -> String {
    let hdr = *sec.header();
    assert_eq!(hdr.version, Version::V2, "llvm-readelf 22 only dumps V2");
    let mut o = String::new();
    o.push_str("SFrame section '.sframe' {\n  Header {\n    Magic: 0xDEE2\n");
    writeln!(o, "    Version: V2 (0x2)").unwrap();
    writeln!(o, "    Flags [ ({:#x})", hdr.flags).unwrap();
    let mut names = vec![
        ("FDEFuncStartPCRel", sframe::F_FDE_FUNC_START_PCREL),
        ("FDESorted", sframe::F_FDE_SORTED),
        ("FramePointer", sframe::F_FRAME_POINTER),
    ];
    names.sort();
    for (n, bit) in names {
        if hdr.flags & bit != 0 {
            writeln!(o, "      {n} ({bit:#x})").unwrap();
        }
    }
    o.push_str("    ]\n");
    let abi = match hdr.abi {
        sframe::Abi::Amd64 => "AMD64EndianLittle",
        sframe::Abi::Aarch64LittleEndian => "AArch64EndianLittle",
    };
    writeln!(o, "    ABI: {abi} ({:#x})", hdr.abi.raw()).unwrap();
    let unused = |v: i8| if v == 0 { " (unused)" } else { "" };
    writeln!(
        o,
        "    CFA fixed FP offset{}: {}",
        unused(hdr.cfa_fixed_fp_offset),
        hdr.cfa_fixed_fp_offset
    )
    .unwrap();
    writeln!(
        o,
        "    CFA fixed RA offset{}: {}",
        unused(hdr.cfa_fixed_ra_offset),
        hdr.cfa_fixed_ra_offset
    )
    .unwrap();
    writeln!(o, "    Auxiliary header length: {}", hdr.auxhdr_len).unwrap();
    writeln!(o, "    Num FDEs: {}", hdr.num_fdes).unwrap();
    writeln!(o, "    Num FREs: {}", hdr.num_fres).unwrap();
    writeln!(o, "    FRE subsection length: {}", hdr.fre_len).unwrap();
    writeln!(o, "    FDE subsection offset: {}", hdr.fde_off).unwrap();
    writeln!(o, "    FRE subsection offset: {}", hdr.fre_off).unwrap();
    o.push_str("    Auxiliary header: []\n  }\n  Function Index [\n");
    for i in 0..sec.num_fdes() {
        let fde = sec.fde(i).unwrap();
        let fde_off = hdr.size() as usize + hdr.fde_off as usize + 20 * i as usize;
        let padding2 = u16::from_le_bytes([bytes[fde_off + 18], bytes[fde_off + 19]]);
        writeln!(o, "    FuncDescEntry [{i}] {{").unwrap();
        writeln!(o, "      PC: {:#X}", fde.func_start).unwrap();
        writeln!(o, "      Size: {:#X}", fde.func_size).unwrap();
        writeln!(o, "      Start FRE Offset: {:#X}", fde.fres_off).unwrap();
        writeln!(o, "      Num FREs: {}", fde.num_fres).unwrap();
        o.push_str("      Info {\n");
        let (ft, fv) = match fde.fre_type {
            FreType::Addr1 => ("Addr1", 0),
            FreType::Addr2 => ("Addr2", 1),
            FreType::Addr4 => ("Addr4", 2),
        };
        writeln!(o, "        FRE Type: {ft} ({fv:#x})").unwrap();
        let mask = fde.pc_type == PcType::Mask;
        writeln!(
            o,
            "        FDE Type: {} ({:#x})",
            if mask { "PCMask" } else { "PCInc" },
            u8::from(mask)
        )
        .unwrap();
        writeln!(o, "        Raw: {:#X}", fde.info).unwrap();
        o.push_str("      }\n");
        writeln!(
            o,
            "      Repetitive block size{}: {:#X}",
            if mask { "" } else { " (unused)" },
            fde.rep_size
        )
        .unwrap();
        writeln!(o, "      Padding2: {padding2:#X}").unwrap();
        o.push_str("      FREs [\n");
        sec.for_each_fre(&fde, |raw, row| {
            o.push_str("        Frame Row Entry {\n");
            let start = if mask {
                u64::from(raw.start)
            } else {
                fde.func_start + u64::from(raw.start)
            };
            writeln!(o, "          Start Address: {start:#X}").unwrap();
            writeln!(
                o,
                "          Return Address Signed: {}",
                if row.ra_mangled { "Yes" } else { "No" }
            )
            .unwrap();
            let (sz, sv) = match raw.word_size() {
                1 => ("B1", 0),
                2 => ("B2", 1),
                _ => ("B4", 2),
            };
            writeln!(o, "          Offset Size: {sz} ({sv:#x})").unwrap();
            let sp = raw.cfa_base_is_sp();
            writeln!(
                o,
                "          Base Register: {} ({:#x})",
                if sp { "SP" } else { "FP" },
                u8::from(sp)
            )
            .unwrap();
            writeln!(o, "          CFA Offset: {}", row.cfa.offset).unwrap();
            if let RegRule::CfaOffset(ra) = row.ra {
                writeln!(o, "          RA Offset: {ra}").unwrap();
            }
            if let RegRule::CfaOffset(fp) = row.fp {
                writeln!(o, "          FP Offset: {fp}").unwrap();
            }
            o.push_str("        }\n");
        })
        .unwrap();
        o.push_str("      ]\n    }\n");
    }
    o.push_str("  ]\n}\n");
    o
}

/// A function as the oracle dump lists it.
pub struct OracleFn {
    pub idx: u32,
    pub pc: u64,
    pub size: u32,
    pub mask: bool,
    /// (STARTPC column, rest of the line)
    pub rows: Vec<(u64, String)>,
}

/// Parse the function blocks of an `objdump --sframe` dump.
pub fn parse_objdump(dump: &str) -> Vec<OracleFn> {
    let mut fns: Vec<OracleFn> = Vec::new();
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix("    func idx [") {
            let (idx, rest) = rest.split_once("]: pc = 0x").unwrap();
            let (pc, rest) = rest.split_once(", size = ").unwrap();
            let size = rest.split_once(' ').unwrap().0;
            fns.push(OracleFn {
                idx: idx.parse().unwrap(),
                pc: u64::from_str_radix(pc, 16).unwrap(),
                size: size.parse().unwrap(),
                mask: false,
                rows: vec![],
            });
        } else if line.starts_with("    STARTPC") {
            fns.last_mut().unwrap().mask = line.contains("[m]");
        } else if line.len() > 22
            && line.starts_with("    ")
            && line[4..20].bytes().all(|c| c.is_ascii_hexdigit())
        {
            let start = u64::from_str_radix(&line[4..20], 16).unwrap();
            fns.last_mut()
                .unwrap()
                .rows
                .push((start, line[22..].to_string()));
        }
    }
    fns
}

/// Line-by-line diff summary for assertion messages.
pub fn first_diff(want: &str, got: &str) -> String {
    for (n, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w != g {
            return format!("line {}:\n  oracle: {w:?}\n  ours:   {g:?}", n + 1);
        }
    }
    format!(
        "length differs: oracle {} lines, ours {} lines",
        want.lines().count(),
        got.lines().count()
    )
}
