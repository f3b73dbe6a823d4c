// SPDX-License-Identifier: GPL-2.0

//! Round trip on Debian 12's own libraries (built without SFrame):
//! synthesize, decode with the kernel's decoder (`rust/sframe`), and compare
//! the row at every byte of every function with gimli's CFI row for it.
//! The host's x86_64 libraries, and, where `SFRAME_SYNTH_ARM64_ROOT` names
//! a directory Debian's arm64 packages were unpacked into (`dpkg-deb -x`;
//! `make check-arm64` does), their AArch64 ones.
//!
//! The expected rows and the expected set of encodable functions are
//! computed here from gimli's rows directly, independently of the
//! synthesizer's own conversion. Rows whose CFA is GNU ld's lazy-PLT
//! expression (recognized here by its bytes) are expected as PC-mask
//! functions, and the CFA the decoder gives for every byte of them is
//! compared with the value of the DWARF expression itself, evaluated by
//! gimli's expression evaluator (`gimli::Evaluation`) at that address.
//!
//! `cargo test --release --test debian_libs -- --nocapture` prints the
//! coverage figures.

use std::collections::BTreeMap;

use gimli::{
    AArch64, BaseAddresses, CfaRule, CieOrFde, EhFrame, Encoding, EndianSlice, EvaluationResult,
    Expression, LittleEndian, Location, Piece, Register, RegisterRule, UnwindContext,
    UnwindSection, Value, Vendor, X86_64,
};
use object::{Object, ObjectSection};
use sframe::{Base, Error, PcType, RegRule, Section, Version};
use sframe_synth::{elf, synthesize};

const ARM64_LIBS: [&str; 5] = [
    "lib/aarch64-linux-gnu/libc.so.6",
    "lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
    "usr/lib/aarch64-linux-gnu/libstdc++.so.6",
    "lib/aarch64-linux-gnu/libm.so.6",
    "lib/aarch64-linux-gnu/libz.so.1",
];

/// The registers the oracle reads, by architecture (DWARF numbers).
#[derive(Clone, Copy)]
struct Regs {
    sp: Register,
    fp: Register,
    ra: Register,
    /// AArch64's RA_SIGN_STATE pseudo-register.
    sign: Option<Register>,
    /// Where every row must have the RA (x86_64: CFA - 8).
    fixed_ra: Option<i64>,
    vendor: Vendor,
}

const X86_64_REGS: Regs = Regs {
    sp: X86_64::RSP,
    fp: X86_64::RBP,
    ra: X86_64::RA,
    sign: None,
    fixed_ra: Some(-8),
    vendor: Vendor::Default,
};

const AARCH64_REGS: Regs = Regs {
    sp: AArch64::SP,
    fp: AArch64::X29,
    ra: AArch64::X30,
    sign: Some(AArch64::RA_SIGN_STATE),
    fixed_ra: None,
    vendor: Vendor::AArch64,
};

const LIBS: [&str; 5] = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/lib/x86_64-linux-gnu/libz.so.1",
];

/// What the decoder must answer for one address.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expect {
    Frame {
        cfa_fp: bool,
        cfa_off: i64,
        /// `None`: still in the link register.
        ra_off: Option<i64>,
        ra_signed: bool,
        fp_off: Option<i64>,
    },
    Outermost,
    /// CFA = GNU ld's lazy-PLT expression (these bytes), RA at CFA - 8, RBP
    /// unchanged: to be evaluated at every address.
    Plt(Vec<u8>),
}

/// One FDE as gimli evaluates it.
struct GimliFde {
    start: u64,
    len: u64,
    signal: bool,
    encoding: Encoding,
    /// (start, end, expectation) per row, or `None` if some row cannot be
    /// said in SFrame.
    rows: Option<Vec<(u64, u64, Expect)>>,
}

/// Whether `expr` is the CFA expression of a lazy PLT entry as binutils
/// writes it (`elf_x86_64_eh_frame_lazy_plt`, `..._lazy_ibt_plt`):
/// `DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
/// DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus`, N from 1 to 15.
fn is_plt_expression(expr: &[u8]) -> bool {
    matches!(
        expr,
        [
            0x77,
            0x08,
            0x80,
            0x00,
            0x3f,
            0x1a,
            0x31..=0x3f,
            0x2a,
            0x33,
            0x24,
            0x22
        ]
    )
}

/// The CFA `expr` gives with RSP = `rsp` and RIP = `rip`, by gimli's
/// DWARF expression evaluator.
fn evaluate_cfa(expr: &[u8], encoding: Encoding, rsp: u64, rip: u64) -> u64 {
    let mut eval = Expression(EndianSlice::new(expr, LittleEndian)).evaluation(encoding);
    let mut state = eval.evaluate().unwrap();
    loop {
        state = match state {
            EvaluationResult::Complete => break,
            EvaluationResult::RequiresRegister { register, .. } => {
                let v = match register {
                    X86_64::RSP => rsp,
                    X86_64::RA => rip,
                    r => panic!("register {r:?} asked for"),
                };
                eval.resume_with_register(Value::Generic(v)).unwrap()
            }
            other => panic!("{other:?}"),
        };
    }
    match eval.as_result() {
        [Piece {
            location: Location::Address { address },
            ..
        }] => *address,
        other => panic!("{other:?}"),
    }
}

/// The functions the synthesizer must write for an encodable FDE: runs of
/// PLT rows are PC-mask functions, runs of other rows PC-increment ones:
/// (start, end, PC-mask).
fn functions_of(f: &GimliFde) -> Vec<(u64, u64, bool)> {
    let end = f.start + f.len;
    let mut out: Vec<(u64, u64, bool)> = Vec::new();
    for &(rs, re, ref e) in f.rows.as_ref().unwrap() {
        let (rs, re) = (rs.max(f.start), re.min(end));
        if rs >= re {
            continue;
        }
        let plt = matches!(e, Expect::Plt(_));
        match out.last_mut() {
            Some(last) if last.2 == plt => last.1 = re,
            _ => out.push((if out.is_empty() { f.start } else { rs }, re, plt)),
        }
    }
    out
}

/// The oracle: gimli's rows, judged by the rule of the task (the CFA at an
/// offset from SP or FP; RA undefined, or at CFA-8 on x86_64, at an offset
/// from the CFA or still in x30 on AArch64, signed or not; FP unchanged or
/// at an offset from the CFA).
fn gimli_fdes(path: &str, data: &[u8], regs: Regs) -> Vec<GimliFde> {
    let file = object::File::parse(data).unwrap();
    let sec = file.section_by_name(".eh_frame").unwrap();
    let mut eh = EhFrame::new(sec.data().unwrap(), LittleEndian);
    eh.set_address_size(8);
    eh.set_vendor(regs.vendor);
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
            let ra = row.register(regs.ra);
            let rbp = row.register(regs.fp);
            let rbp_kept = matches!(
                rbp,
                None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined)
            );
            let plt = match row.cfa() {
                CfaRule::Expression(e) => {
                    let bytes = e.get(&eh).unwrap().0.slice().to_vec();
                    is_plt_expression(&bytes).then_some(bytes)
                }
                _ => None,
            };
            let e = if ra == Some(RegisterRule::Undefined) {
                Some(Expect::Outermost)
            } else if let Some(bytes) = plt {
                (ra == Some(RegisterRule::Offset(-8)) && rbp_kept).then_some(Expect::Plt(bytes))
            } else {
                let cfa = match *row.cfa() {
                    CfaRule::RegisterAndOffset { register, offset }
                        if register == regs.sp || register == regs.fp =>
                    {
                        Some((register == regs.fp, offset))
                    }
                    _ => None,
                };
                let fp = match rbp {
                    None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => {
                        Some(None)
                    }
                    Some(RegisterRule::Offset(o)) => Some(Some(o)),
                    _ => None,
                };
                let ra_off = match (ra, regs.fixed_ra) {
                    (Some(RegisterRule::Offset(o)), Some(f)) if o == f => Some(Some(o)),
                    (Some(RegisterRule::Offset(o)), None) if o != 0 => Some(Some(o)),
                    (None | Some(RegisterRule::SameValue), None) => Some(None),
                    _ => None,
                };
                let ra_signed = regs
                    .sign
                    .is_some_and(|r| row.register(r) == Some(RegisterRule::Constant(1)));
                match (cfa, fp, ra_off) {
                    (Some((cfa_fp, cfa_off)), Some(fp_off), Some(ra_off)) => Some(Expect::Frame {
                        cfa_fp,
                        cfa_off,
                        ra_off,
                        ra_signed,
                        fp_off,
                    }),
                    _ => None,
                }
            };
            match (e, rows.as_mut()) {
                (Some(e), Some(r)) => r.push((row.start_address(), row.end_address(), e)),
                _ => rows = None,
            }
        }
        assert_eq!(fde.cie().return_address_register(), regs.ra, "{path}");
        out.push(GimliFde {
            start: fde.initial_address(),
            len: fde.len(),
            signal: fde.cie().is_signal_trampoline(),
            encoding: fde.cie().encoding(),
            rows,
        });
    }
    out
}

/// What [`check_lib`] printed of an object, and how many of its lookups
/// found the return address signed.
struct Checked {
    report: String,
    signed: u64,
}

fn check_lib(path: &str, regs: Regs) -> Option<Checked> {
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
    assert_eq!(h.fixed_ra_offset().map(i64::from), regs.fixed_ra);
    assert_eq!(h.cfa_fixed_fp_offset, 0);

    let fdes = gimli_fdes(path, &data, regs);
    let encodable: Vec<&GimliFde> = fdes
        .iter()
        .filter(|f| f.rows.is_some() && f.len > 0)
        .collect();
    // Every encodable FDE was encoded, nothing else.
    assert_eq!(syn.stats.fdes, fdes.len(), "{path}");
    assert_eq!(syn.stats.encoded, encodable.len(), "{path}");
    let mut functions: Vec<(u64, u64, bool)> =
        encodable.iter().flat_map(|f| functions_of(f)).collect();
    functions.sort_unstable();
    assert_eq!(sec.num_fdes() as usize, functions.len(), "{path}");
    for (i, &(s, e, plt)) in functions.iter().enumerate() {
        let d = sec.fde(i as u32).unwrap();
        assert_eq!((d.func_start, d.func_end()), (s, e), "{path}: FDE {i}");
        if plt {
            assert_eq!(
                (d.pc_type, d.rep_size),
                (PcType::Mask, 16),
                "{path}: FDE {i}"
            );
        } else {
            assert_eq!(d.pc_type, PcType::Inc, "{path}: FDE {i}");
        }
    }

    // Every byte of every encoded function: the decoded row is gimli's;
    // in PLT entries, the CFA is the value of the expression.
    let mut lookups = 0u64;
    let mut plt_bytes = 0u64;
    let mut signed = 0u64;
    for f in &encodable {
        let end = f.start + f.len;
        for (rs, re, e) in f.rows.as_ref().unwrap() {
            let (fs, fe, _) = *functions
                .iter()
                .find(|(s, e, _)| *s <= (*rs).max(f.start) && (*rs).max(f.start) < *e)
                .unwrap();
            for pc in (*rs).max(f.start)..(*re).min(end) {
                let row = sec
                    .find(pc)
                    .unwrap_or_else(|err| panic!("{path}: {pc:#x}: {err:?}"));
                lookups += 1;
                assert_eq!(row.func_start, fs, "{path}: {pc:#x}");
                assert_eq!(u64::from(row.func_size), fe - fs, "{path}: {pc:#x}");
                assert_eq!(row.signal_frame, f.signal, "{path}: {pc:#x}");
                let (cfa_fp, cfa_off, ra_off, ra_signed, fp_off) = match e {
                    Expect::Outermost => {
                        assert!(row.outermost, "{path}: {pc:#x}");
                        continue;
                    }
                    Expect::Frame {
                        cfa_fp,
                        cfa_off,
                        ra_off,
                        ra_signed,
                        fp_off,
                    } => (*cfa_fp, *cfa_off, *ra_off, *ra_signed, *fp_off),
                    Expect::Plt(expr) => {
                        plt_bytes += 1;
                        // CFA - RSP, the same whatever RSP is.
                        let rsp = 0x7ffc_1234_5670;
                        let cfa = evaluate_cfa(expr, f.encoding, rsp, pc);
                        let again = evaluate_cfa(expr, f.encoding, rsp + 0x1008, pc);
                        assert_eq!(again - cfa, 0x1008, "{path}: {pc:#x}");
                        (false, (cfa - rsp) as i64, Some(-8), false, None)
                    }
                };
                assert!(!row.outermost, "{path}: {pc:#x}");
                let base = if cfa_fp { Base::Fp } else { Base::Sp };
                assert_eq!(row.cfa.base, base, "{path}: {pc:#x}");
                assert_eq!(i64::from(row.cfa.offset), cfa_off, "{path}: {pc:#x}");
                assert!(!row.cfa.deref, "{path}: {pc:#x}");
                let ra = match ra_off {
                    Some(o) => RegRule::CfaOffset(i32::try_from(o).unwrap()),
                    None => RegRule::SameValue,
                };
                assert_eq!(row.ra, ra, "{path}: {pc:#x}");
                assert_eq!(row.ra_mangled, ra_signed, "{path}: {pc:#x}");
                signed += u64::from(ra_signed);
                let fp = match fp_off {
                    Some(o) => RegRule::CfaOffset(i32::try_from(o).unwrap()),
                    None => RegRule::SameValue,
                };
                assert_eq!(row.fp, fp, "{path}: {pc:#x}");
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
    Some(Checked {
        report: format!(
            "{path}: {lookups} lookups match gimli ({plt_bytes} PLT bytes against the evaluated expression, {signed} with the return address signed), {left_out} left-out bytes not covered\n{}",
            syn.stats
        ),
        signed,
    })
}

#[test]
fn debian_libraries_round_trip() {
    let mut report = String::new();
    for lib in LIBS {
        if let Some(c) = check_lib(lib, X86_64_REGS) {
            report.push_str(&c.report);
        }
    }
    println!("{report}");
}

#[test]
fn debian_arm64_libraries_round_trip() {
    let Some(root) = std::env::var_os("SFRAME_SYNTH_ARM64_ROOT") else {
        println!("note: SFRAME_SYNTH_ARM64_ROOT not set, skipped");
        return;
    };
    let mut report = String::new();
    for lib in ARM64_LIBS {
        let path = std::path::Path::new(&root).join(lib);
        if let Some(c) = check_lib(path.to_str().unwrap(), AARCH64_REGS) {
            report.push_str(&c.report);
        }
    }
    println!("{report}");
}

/// Code built with `-mbranch-protection=standard` (signed return
/// addresses: `paciasp`, `.cfi_negate_ra_state`) by Debian's cross
/// compiler, if it is installed (`make check-arm64` installs it): the same
/// round trip, and some rows say the return address is signed.
#[test]
fn arm64_signed_return_addresses_round_trip() {
    const CC: &str = "aarch64-linux-gnu-gcc";
    let d = std::env::temp_dir().join(format!("sframe-synth-pac-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let src = d.join("pac.c");
    std::fs::write(
        &src,
        "int leaf(int x) { return x * 3; }\n\
         __attribute__((noinline)) int mid(int x) { return leaf(x) + 1; }\n\
         int top(int (*f)(int), int x) { return f(mid(x)) + mid(x + 1); }\n",
    )
    .unwrap();
    let so = d.join("libpac.so");
    let built = std::process::Command::new(CC)
        .args(["-O2", "-fPIC", "-shared", "-mbranch-protection=standard"])
        .args(["-Wl,--build-id", "-o"])
        .args([&so, &src])
        .status();
    if !built.is_ok_and(|s| s.success()) {
        println!("note: {CC} could not build {}, skipped", so.display());
        return;
    }
    let path = so.to_str().unwrap();
    let c = check_lib(path, AARCH64_REGS).unwrap();
    println!("{}", c.report);
    assert!(
        c.signed > 0,
        "{path}: no row says the return address is signed"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
