// SPDX-License-Identifier: GPL-2.0

//! Round trip on Debian 12's own libraries (built without SFrame):
//! synthesize, decode with the kernel's decoder (`rust/sframe`), and compare
//! the row at every byte of every function with gimli's CFI row for it.
//!
//! The expected rows and the expected set of encodable functions are
//! computed here from gimli's rows directly, independently of the
//! synthesizer's own conversion.
//!
//! `cargo test --release --test debian_libs -- --nocapture` prints the
//! coverage figures.

use std::collections::BTreeMap;

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, EhFrame, LittleEndian, RegisterRule, UnwindContext,
    UnwindSection, X86_64,
};
use object::{Object, ObjectSection};
use sframe::{Base, Error, RegRule, Section, Version};
use sframe_synth::{elf, synthesize};

const LIBS: [&str; 5] = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/lib/x86_64-linux-gnu/libz.so.1",
];

/// What the decoder must answer for one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Frame {
        cfa_fp: bool,
        cfa_off: i64,
        fp_off: Option<i64>,
    },
    Outermost,
}

/// One FDE as gimli evaluates it.
struct GimliFde {
    start: u64,
    len: u64,
    signal: bool,
    /// (start, end, expectation) per row, or `None` if some row cannot be
    /// said in SFrame.
    rows: Option<Vec<(u64, u64, Expect)>>,
}

/// The oracle: gimli's rows, judged by the rule of the task (CFA = RSP/RBP
/// + offset, RA at CFA-8 or undefined, RBP unchanged or at CFA + offset).
fn gimli_fdes(path: &str, data: &[u8]) -> Vec<GimliFde> {
    let file = object::File::parse(data).unwrap();
    let sec = file.section_by_name(".eh_frame").unwrap();
    let mut eh = EhFrame::new(sec.data().unwrap(), LittleEndian);
    eh.set_address_size(8);
    let mut bases = BaseAddresses::default().set_eh_frame(sec.address());
    if let Some(s) = file.section_by_name(".eh_frame_hdr") {
        bases = bases.set_eh_frame_hdr(s.address());
    }
    if let Some(s) = file.section_by_name(".text") {
        bases = bases.set_text(s.address());
    }
    if let Some(s) = file.section_by_name(".got") {
        bases = bases.set_got(s.address());
    }
    let mut ctx = UnwindContext::new();
    let mut out = Vec::new();
    let mut entries = eh.entries(&bases);
    while let Some(entry) = entries.next().unwrap() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let fde = partial.parse(EhFrame::cie_from_offset).unwrap();
        let mut table = fde.rows(&eh, &bases, &mut ctx).unwrap();
        let mut rows = Some(Vec::new());
        while let Some(row) = table.next_row().unwrap() {
            let ra = row.register(X86_64::RA);
            let e = if ra == Some(RegisterRule::Undefined) {
                Some(Expect::Outermost)
            } else {
                let cfa = match *row.cfa() {
                    CfaRule::RegisterAndOffset { register, offset }
                        if register == X86_64::RSP || register == X86_64::RBP =>
                    {
                        Some((register == X86_64::RBP, offset))
                    }
                    _ => None,
                };
                let fp = match row.register(X86_64::RBP) {
                    None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => {
                        Some(None)
                    }
                    Some(RegisterRule::Offset(o)) => Some(Some(o)),
                    _ => None,
                };
                match (cfa, fp, ra) {
                    (Some((cfa_fp, cfa_off)), Some(fp_off), Some(RegisterRule::Offset(-8))) => {
                        Some(Expect::Frame {
                            cfa_fp,
                            cfa_off,
                            fp_off,
                        })
                    }
                    _ => None,
                }
            };
            match (e, rows.as_mut()) {
                (Some(e), Some(r)) => r.push((row.start_address(), row.end_address(), e)),
                _ => rows = None,
            }
        }
        assert_eq!(fde.cie().return_address_register(), X86_64::RA, "{path}");
        out.push(GimliFde {
            start: fde.initial_address(),
            len: fde.len(),
            signal: fde.cie().is_signal_trampoline(),
            rows,
        });
    }
    out
}

fn check_lib(path: &str) -> Option<String> {
    let Ok(data) = std::fs::read(path) else {
        println!("note: {path} does not exist, skipped");
        return None;
    };
    let obj = elf::read_elf(&data).unwrap();
    assert!(!obj.has_sframe, "{path}: Debian 12 builds without SFrame");
    assert!(obj.build_id.is_some(), "{path}: no build ID");
    let syn = synthesize(&obj).unwrap();
    let bytes = &syn.section[..];
    let len = u32::try_from(bytes.len()).unwrap();

    let mut sec = Section::new(bytes, len, 0).unwrap();
    sec.validate().unwrap();
    let h = *sec.header();
    assert_eq!(h.version, Version::V3);
    assert!(h.fde_sorted() && h.func_start_pcrel());
    assert_eq!(h.cfa_fixed_ra_offset, -8);
    assert_eq!(h.cfa_fixed_fp_offset, 0);

    let fdes = gimli_fdes(path, &data);
    let encodable: Vec<&GimliFde> = fdes
        .iter()
        .filter(|f| f.rows.is_some() && f.len > 0)
        .collect();
    // Every encodable FDE was encoded, nothing else.
    assert_eq!(syn.stats.fdes, fdes.len(), "{path}");
    assert_eq!(syn.stats.encoded, encodable.len(), "{path}");
    assert_eq!(sec.num_fdes() as usize, encodable.len(), "{path}");
    let mut starts: Vec<u64> = encodable.iter().map(|f| f.start).collect();
    starts.sort_unstable();
    for (i, s) in starts.iter().enumerate() {
        let d = sec.fde(i as u32).unwrap();
        assert_eq!(d.func_start, *s, "{path}: FDE {i}");
    }

    // Every byte of every encoded function: the decoded row is gimli's.
    let mut lookups = 0u64;
    for f in &encodable {
        let end = f.start + f.len;
        for &(rs, re, e) in f.rows.as_ref().unwrap() {
            for pc in rs.max(f.start)..re.min(end) {
                let row = sec
                    .find(pc)
                    .unwrap_or_else(|err| panic!("{path}: {pc:#x}: {err:?}"));
                lookups += 1;
                assert_eq!(row.func_start, f.start, "{path}: {pc:#x}");
                assert_eq!(u64::from(row.func_size), f.len, "{path}: {pc:#x}");
                assert_eq!(row.signal_frame, f.signal, "{path}: {pc:#x}");
                match e {
                    Expect::Outermost => assert!(row.outermost, "{path}: {pc:#x}"),
                    Expect::Frame {
                        cfa_fp,
                        cfa_off,
                        fp_off,
                    } => {
                        assert!(!row.outermost, "{path}: {pc:#x}");
                        let base = if cfa_fp { Base::Fp } else { Base::Sp };
                        assert_eq!(row.cfa.base, base, "{path}: {pc:#x}");
                        assert_eq!(i64::from(row.cfa.offset), cfa_off, "{path}: {pc:#x}");
                        assert!(!row.cfa.deref, "{path}: {pc:#x}");
                        assert_eq!(row.ra, RegRule::CfaOffset(-8), "{path}: {pc:#x}");
                        let fp = match fp_off {
                            Some(o) => RegRule::CfaOffset(i32::try_from(o).unwrap()),
                            None => RegRule::SameValue,
                        };
                        assert_eq!(row.fp, fp, "{path}: {pc:#x}");
                    }
                }
            }
        }
    }

    // Every byte of every left-out function: not covered (the kernel falls
    // back to frame pointers there).
    let mut left_out = 0u64;
    for f in fdes.iter().filter(|f| f.rows.is_none()) {
        for pc in f.start..f.start + f.len {
            assert_eq!(sec.find(pc), Err(Error::NotCovered), "{path}: {pc:#x}");
            left_out += 1;
        }
    }
    assert_eq!(
        syn.stats.encoded_bytes + left_out,
        syn.stats.fde_bytes,
        "{path}"
    );

    let mut reasons = BTreeMap::new();
    for l in &syn.left_out {
        *reasons.entry(l.reason.name()).or_insert(0usize) += 1;
        println!(
            "  {path}: left out {:#x}..{:#x}: {}",
            l.start,
            l.start + l.size,
            l.reason
        );
    }
    Some(format!(
        "{path}: {lookups} lookups match gimli, {left_out} left-out bytes not covered\n{}",
        syn.stats
    ))
}

#[test]
fn debian_libraries_round_trip() {
    let mut report = String::new();
    for lib in LIBS {
        if let Some(r) = check_lib(lib) {
            report.push_str(&r);
        }
    }
    println!("{report}");
}
