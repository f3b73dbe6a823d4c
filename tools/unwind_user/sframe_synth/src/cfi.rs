// SPDX-License-Identifier: GPL-2.0

//! From `.eh_frame` to SFrame rows: every FDE's CFI program is evaluated by
//! gimli into a table of rows, and a function is kept only if every row
//! says something an SFrame default FDE with a fixed RA offset can say
//! exactly. A function is never approximated: left out, the kernel falls
//! back to frame pointers for it.

use std::fmt;

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, EhFrame, EndianSlice, FrameDescriptionEntry, LittleEndian,
    RegisterRule, UnwindContext, UnwindSection, UnwindTableRow, X86_64,
};

use crate::encode::{CfaBase, Fre, Function, Rule, FIXED_RA_OFFSET, MAX_FRES};

/// Why a function was left out of the SFrame section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The CFA is a DWARF expression (`DW_CFA_def_cfa_expression`: x86_64
    /// `.plt` entries, signal trampolines).
    CfaExpression,
    /// The CFA is based on a register other than RSP and RBP (a dynamic
    /// realignment pointer, DRAP).
    CfaRegister,
    /// The return address is not saved at CFA - 8 (elsewhere, in a
    /// register, by an expression, or no rule at all).
    RaRule,
    /// The CIE's return address column is not RIP (16).
    RaColumn,
    /// The caller's RBP is neither in RBP nor saved at CFA + offset (in
    /// another register, by an expression, `val_offset`).
    FpRule,
    /// A CFA or RBP offset does not fit 32 bits.
    OffsetRange,
    /// gimli could not parse or evaluate the FDE's CFI.
    CfiError,
    /// The FDE covers no byte.
    Empty,
    /// The function is larger than 4 GiB.
    TooLarge,
    /// More distinct rows than an SFrame V3 function can hold (65535).
    TooManyRows,
    /// The function overlaps another one already kept (duplicate FDEs).
    Overlap,
    /// The function is not inside an executable `PT_LOAD` segment.
    OutsideText,
}

impl Reason {
    /// Every reason, in report order.
    pub const ALL: [Reason; 12] = [
        Reason::CfaExpression,
        Reason::CfaRegister,
        Reason::RaRule,
        Reason::RaColumn,
        Reason::FpRule,
        Reason::OffsetRange,
        Reason::CfiError,
        Reason::Empty,
        Reason::TooLarge,
        Reason::TooManyRows,
        Reason::Overlap,
        Reason::OutsideText,
    ];

    /// Short name, as printed by `--report`.
    pub fn name(self) -> &'static str {
        match self {
            Reason::CfaExpression => "cfa expression",
            Reason::CfaRegister => "cfa not rsp/rbp based",
            Reason::RaRule => "ra not at cfa-8",
            Reason::RaColumn => "ra column not rip",
            Reason::FpRule => "rbp rule not expressible",
            Reason::OffsetRange => "offset beyond 32 bits",
            Reason::CfiError => "cfi error",
            Reason::Empty => "empty fde",
            Reason::TooLarge => "function over 4 GiB",
            Reason::TooManyRows => "over 65535 rows",
            Reason::Overlap => "overlaps another fde",
            Reason::OutsideText => "outside executable segments",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An FDE whose function was left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// Start address of the function (0 if the FDE could not be parsed).
    pub start: u64,
    /// Size in bytes (0 if the FDE could not be parsed).
    pub size: u64,
    /// Why.
    pub reason: Reason,
}

/// Where `.eh_frame` is and the base addresses its pointer encodings may
/// refer to (all link-time virtual addresses).
#[derive(Clone, Copy, Debug)]
pub struct EhFrameInput<'a> {
    /// The section's bytes.
    pub data: &'a [u8],
    /// Its address.
    pub addr: u64,
    /// Address of `.eh_frame_hdr`, if known (`DW_EH_PE_datarel` there).
    pub eh_frame_hdr: Option<u64>,
    /// Address of `.text`, if known (`DW_EH_PE_textrel`).
    pub text: Option<u64>,
    /// Address of `.got`, if known (`DW_EH_PE_datarel`).
    pub got: Option<u64>,
}

/// The result of reading `.eh_frame`.
#[derive(Clone, Debug, Default)]
pub struct Cfi {
    /// Functions every row of which SFrame can express, in `.eh_frame`
    /// order (they may still overlap each other).
    pub functions: Vec<Function>,
    /// Functions left out, and why.
    pub left_out: Vec<LeftOut>,
}

impl Cfi {
    /// Number of FDEs seen.
    pub fn fdes(&self) -> usize {
        self.functions.len().saturating_add(self.left_out.len())
    }
}

/// `.eh_frame` itself is malformed: its entries cannot be walked (an FDE
/// that cannot be parsed is only left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfiError {
    /// Offset in `.eh_frame` after the last entry read.
    pub offset: u64,
    /// gimli's description.
    pub error: gimli::Error,
}

impl fmt::Display for CfiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed .eh_frame after offset {:#x}: {}",
            self.offset, self.error
        )
    }
}

impl std::error::Error for CfiError {}

type Row = UnwindTableRow<usize>;
type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// The SFrame rule of one CFI row, or why there is none.
pub fn rule_of(row: &Row) -> Result<Rule, Reason> {
    // No caller: the CFA does not matter (GNU as does the same for
    // `.cfi_undefined rip`).
    let ra = row.register(X86_64::RA);
    if ra == Some(RegisterRule::Undefined) {
        return Ok(Rule::Outermost);
    }
    let (cfa_base, cfa_offset) = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            let base = match *register {
                X86_64::RSP => CfaBase::Sp,
                X86_64::RBP => CfaBase::Fp,
                _ => return Err(Reason::CfaRegister),
            };
            (
                base,
                i32::try_from(*offset).map_err(|_| Reason::OffsetRange)?,
            )
        }
        CfaRule::Expression(_) => return Err(Reason::CfaExpression),
    };
    if ra != Some(RegisterRule::Offset(i64::from(FIXED_RA_OFFSET))) {
        return Err(Reason::RaRule);
    }
    let fp_offset = match row.register(X86_64::RBP) {
        // Callee-saved: no rule means it still holds the caller's value.
        None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => None,
        Some(RegisterRule::Offset(o)) => Some(i32::try_from(o).map_err(|_| Reason::OffsetRange)?),
        Some(_) => return Err(Reason::FpRule),
    };
    Ok(Rule::Frame {
        cfa_base,
        cfa_offset,
        fp_offset,
    })
}

/// Evaluate one FDE into SFrame rows (identical neighbours merged).
fn rows_of(
    eh: &EhFrame<Slice<'_>>,
    bases: &BaseAddresses,
    ctx: &mut UnwindContext<usize>,
    fde: &FrameDescriptionEntry<Slice<'_>>,
    size: u32,
) -> Result<Vec<Fre>, Reason> {
    let start = fde.initial_address();
    let mut table = fde.rows(eh, bases, ctx).map_err(|_| Reason::CfiError)?;
    let mut fres: Vec<Fre> = Vec::new();
    while let Some(row) = table.next_row().map_err(|_| Reason::CfiError)? {
        // Rows covering nothing, or only bytes past the function, say
        // nothing about it.
        if row.start_address() >= row.end_address() {
            continue;
        }
        let off = match row
            .start_address()
            .checked_sub(start)
            .and_then(|o| u32::try_from(o).ok())
        {
            Some(o) if o < size => o,
            _ => continue,
        };
        let rule = rule_of(row)?;
        if fres.last().is_some_and(|l| l.rule == rule) {
            continue;
        }
        if fres.len() >= MAX_FRES {
            return Err(Reason::TooManyRows);
        }
        fres.push(Fre { start: off, rule });
    }
    if fres.is_empty() {
        // All rows empty or past the end: nothing describes the code.
        return Err(Reason::CfiError);
    }
    Ok(fres)
}

/// Read every FDE of `.eh_frame` and sort its function into kept or left
/// out. Fails only if the entries of `.eh_frame` cannot be walked.
pub fn read_eh_frame(input: &EhFrameInput<'_>) -> Result<Cfi, CfiError> {
    let mut eh = EhFrame::new(input.data, LittleEndian);
    eh.set_address_size(8);
    let mut bases = BaseAddresses::default().set_eh_frame(input.addr);
    if let Some(a) = input.eh_frame_hdr {
        bases = bases.set_eh_frame_hdr(a);
    }
    if let Some(a) = input.text {
        bases = bases.set_text(a);
    }
    if let Some(a) = input.got {
        bases = bases.set_got(a);
    }
    let mut ctx = UnwindContext::new();
    let mut out = Cfi::default();
    let mut entries = eh.entries(&bases);
    let mut offset = 0u64;
    loop {
        let entry = match entries.next() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(error) => return Err(CfiError { offset, error }),
        };
        let partial = match entry {
            CieOrFde::Cie(cie) => {
                offset = u64::try_from(cie.offset()).unwrap_or(u64::MAX);
                continue;
            }
            CieOrFde::Fde(p) => p,
        };
        let fde = match partial.parse(EhFrame::cie_from_offset) {
            Ok(f) => f,
            Err(_) => {
                out.left_out.push(LeftOut {
                    start: 0,
                    size: 0,
                    reason: Reason::CfiError,
                });
                continue;
            }
        };
        offset = u64::try_from(fde.offset()).unwrap_or(u64::MAX);
        let start = fde.initial_address();
        let len = fde.len();
        let left_out = |reason| LeftOut {
            start,
            size: len,
            reason,
        };
        if len == 0 {
            out.left_out.push(left_out(Reason::Empty));
            continue;
        }
        let Ok(size) = u32::try_from(len) else {
            out.left_out.push(left_out(Reason::TooLarge));
            continue;
        };
        if start.checked_add(len).is_none() {
            out.left_out.push(left_out(Reason::CfiError));
            continue;
        }
        if fde.cie().return_address_register() != X86_64::RA {
            out.left_out.push(left_out(Reason::RaColumn));
            continue;
        }
        match rows_of(&eh, &bases, &mut ctx, &fde, size) {
            Ok(fres) => out.functions.push(Function {
                start,
                size,
                signal_frame: fde.cie().is_signal_trampoline(),
                fres,
            }),
            Err(reason) => out.left_out.push(left_out(reason)),
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use gimli::write::{
        Address, CallFrameInstruction as I, CommonInformationEntry, EhFrame as WEhFrame, EndianVec,
        Expression, FrameDescriptionEntry, FrameTable,
    };
    use gimli::{Encoding, Format, Register};

    /// One synthetic FDE: start, length, (offset, instruction) pairs.
    pub(crate) type Spec = (u64, u32, Vec<(u32, I)>);

    /// A CIE as GCC writes it for x86_64: CFA = RSP + 8, RA at CFA - 8.
    fn cie(ra: Register, signal: bool) -> CommonInformationEntry {
        let enc = Encoding {
            address_size: 8,
            format: Format::Dwarf32,
            version: 1,
        };
        let mut c = CommonInformationEntry::new(enc, 1, -8, ra);
        c.add_instruction(I::Cfa(X86_64::RSP, 8));
        c.add_instruction(I::Offset(X86_64::RA, -8));
        c.signal_trampoline = signal;
        c
    }

    /// `.eh_frame` bytes (absolute FDE addresses) for FDEs of a standard
    /// CIE, a signal-trampoline CIE (`signal`) and a CIE whose return
    /// address column is RAX (`odd_ra`).
    pub(crate) fn eh_frame(normal: Vec<Spec>, signal: Vec<Spec>, odd_ra: Vec<Spec>) -> Vec<u8> {
        let mut table = FrameTable::default();
        for (specs, c) in [
            (normal, cie(X86_64::RA, false)),
            (signal, cie(X86_64::RA, true)),
            (odd_ra, cie(X86_64::RAX, false)),
        ] {
            let id = table.add_cie(c);
            for (start, len, ins) in specs {
                let mut f = FrameDescriptionEntry::new(Address::Constant(start), len);
                for (off, i) in ins {
                    f.add_instruction(off, i);
                }
                table.add_fde(id, f);
            }
        }
        let mut w = WEhFrame(EndianVec::new(LittleEndian));
        table.write_eh_frame(&mut w).unwrap();
        w.0.into_vec()
    }

    fn read(bytes: &[u8]) -> Cfi {
        read_eh_frame(&EhFrameInput {
            data: bytes,
            addr: 0x8000,
            eh_frame_hdr: None,
            text: None,
            got: None,
        })
        .unwrap()
    }

    fn frame(cfa_base: CfaBase, cfa_offset: i32, fp_offset: Option<i32>) -> Rule {
        Rule::Frame {
            cfa_base,
            cfa_offset,
            fp_offset,
        }
    }

    #[test]
    fn prologue_rows_with_identical_neighbours_merged() {
        let ins = vec![
            (1, I::CfaOffset(16)),
            (1, I::Offset(X86_64::RBP, -16)),
            (4, I::CfaRegister(X86_64::RBP)),
            // Saving RBX changes nothing SFrame says: no new FRE.
            (9, I::Offset(X86_64::RBX, -24)),
            (60, I::Cfa(X86_64::RSP, 8)),
            (60, I::Restore(X86_64::RBP)),
            (62, I::RememberState),
            (62, I::CfaOffset(32)),
            (63, I::RestoreState),
        ];
        let cfi = read(&eh_frame(vec![(0x1000, 64, ins)], vec![], vec![]));
        assert!(cfi.left_out.is_empty());
        let f = &cfi.functions[0];
        assert_eq!((f.start, f.size, f.signal_frame), (0x1000, 64, false));
        let got: Vec<(u32, Rule)> = f.fres.iter().map(|r| (r.start, r.rule)).collect();
        assert_eq!(
            got,
            [
                (0, frame(CfaBase::Sp, 8, None)),
                (1, frame(CfaBase::Sp, 16, Some(-16))),
                (4, frame(CfaBase::Fp, 16, Some(-16))),
                (60, frame(CfaBase::Sp, 8, None)),
                (62, frame(CfaBase::Sp, 32, None)),
                (63, frame(CfaBase::Sp, 8, None)),
            ]
        );
    }

    #[test]
    fn rows_past_the_function_end_are_dropped() {
        let ins = vec![(2, I::CfaOffset(16)), (8, I::CfaOffset(24))];
        let cfi = read(&eh_frame(vec![(0x1000, 8, ins)], vec![], vec![]));
        let starts: Vec<u32> = cfi.functions[0].fres.iter().map(|r| r.start).collect();
        assert_eq!(starts, [0, 2]);
    }

    #[test]
    fn outermost_and_signal_frames() {
        let start = vec![(0, I::Undefined(X86_64::RA))];
        let thread_start = vec![(3, I::Undefined(X86_64::RA))];
        let cfi = read(&eh_frame(
            vec![(0x1000, 16, start), (0x2000, 16, thread_start)],
            vec![(0x3000, 8, vec![(0, I::CfaOffset(160))])],
            vec![],
        ));
        assert!(cfi.left_out.is_empty());
        let rules: Vec<Vec<(u32, Rule)>> = cfi
            .functions
            .iter()
            .map(|f| f.fres.iter().map(|r| (r.start, r.rule)).collect())
            .collect();
        assert_eq!(rules[0], [(0, Rule::Outermost)]);
        assert_eq!(
            rules[1],
            [(0, frame(CfaBase::Sp, 8, None)), (3, Rule::Outermost)]
        );
        assert_eq!(rules[2], [(0, frame(CfaBase::Sp, 160, None))]);
        assert!(cfi.functions[2].signal_frame);
        assert!(!cfi.functions[0].signal_frame);
    }

    #[test]
    fn inexpressible_functions_are_left_out_with_their_reason() {
        let mut plt = Expression::new();
        plt.op_breg(X86_64::RSP, 8);
        let normal = vec![
            // .plt: DW_CFA_def_cfa_expression.
            (0x1000, 16, vec![(6, I::CfaExpression(plt))]),
            // DRAP: CFA = r10 + 0 after a realignment.
            (0x1100, 16, vec![(4, I::Cfa(X86_64::R10, 0))]),
            // RA moved into a register (vfork).
            (0x1200, 16, vec![(1, I::Register(X86_64::RA, X86_64::RDI))]),
            // RA saved elsewhere than CFA - 8.
            (0x1300, 16, vec![(1, I::Offset(X86_64::RA, -16))]),
            // Caller's RBP in another register, or as a value.
            (0x1400, 16, vec![(1, I::Register(X86_64::RBP, X86_64::RBX))]),
            (0x1500, 16, vec![(1, I::ValOffset(X86_64::RBP, -16))]),
            // No code.
            (0x1600, 0, vec![]),
            // Fine: kept.
            (0x1700, 16, vec![(1, I::SameValue(X86_64::RBP))]),
        ];
        let cfi = read(&eh_frame(normal, vec![], vec![(0x1800, 16, vec![])]));
        let got: Vec<(u64, Reason)> = cfi.left_out.iter().map(|l| (l.start, l.reason)).collect();
        assert_eq!(
            got,
            [
                (0x1000, Reason::CfaExpression),
                (0x1100, Reason::CfaRegister),
                (0x1200, Reason::RaRule),
                (0x1300, Reason::RaRule),
                (0x1400, Reason::FpRule),
                (0x1500, Reason::FpRule),
                (0x1600, Reason::Empty),
                (0x1800, Reason::RaColumn),
            ]
        );
        assert_eq!(cfi.functions.len(), 1);
        assert_eq!(cfi.functions[0].start, 0x1700);
        assert_eq!(cfi.fdes(), 9);
    }

    #[test]
    fn broken_eh_frame_is_an_error_not_a_panic() {
        let good = eh_frame(
            vec![(0x1000, 16, vec![(1, I::CfaOffset(16))])],
            vec![],
            vec![],
        );
        // A length running past the end of the section.
        let mut bad = good.clone();
        bad.extend([0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0]);
        let err = read_eh_frame(&EhFrameInput {
            data: &bad,
            addr: 0x8000,
            eh_frame_hdr: None,
            text: None,
            got: None,
        });
        assert!(err.is_err());
        // Every truncation and every single-byte change: no panic.
        for n in 0..good.len() {
            let _ = read_eh_frame(&EhFrameInput {
                data: &good[..n],
                addr: 0x8000,
                eh_frame_hdr: None,
                text: None,
                got: None,
            });
            for v in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut m = good.clone();
                m[n] = v;
                let _ = read_eh_frame(&EhFrameInput {
                    data: &m,
                    addr: 0x8000,
                    eh_frame_hdr: None,
                    text: None,
                    got: None,
                });
            }
        }
    }
}
