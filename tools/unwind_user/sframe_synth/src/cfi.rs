// SPDX-License-Identifier: GPL-2.0

//! From `.eh_frame` to SFrame rows: every FDE's CFI program is evaluated by
//! gimli into a table of rows, and a function is kept only if every row
//! says something an SFrame default FDE of the object's architecture can
//! say exactly (on x86_64, with the return address at the fixed CFA - 8;
//! on AArch64, saved at any offset or still in the link register, signed
//! or not). A function is never approximated: left out, the kernel falls
//! back to frame pointers for it.
//!
//! One CFA expression is understood: the one GNU ld writes for the entries
//! of a lazy x86_64 `.plt` (see [`plt_push_end`]). Those rows become a
//! PC-mask function, as ld describes its PLT in its own SFrame output.

use std::fmt;

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, EhFrame, EndianSlice, Expression, FrameDescriptionEntry,
    LittleEndian, Operation, RegisterRule, UnwindContext, UnwindSection, UnwindTableRow, X86_64,
};

use sframe::MAX_FRES_PER_FDE;

use crate::arch::Arch;
use crate::encode::{self, CfaBase, Fre, Function, Rule};

/// Size of a lazy `.plt` entry on x86_64 (the block size of its PC-mask
/// function).
pub const PLT_ENTRY_SIZE: u8 = 16;

/// Why a function was left out of the SFrame section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The CFA is a DWARF expression (`DW_CFA_def_cfa_expression`) other
    /// than the one of lazy `.plt` entries (signal trampolines).
    CfaExpression,
    /// The rows with the `.plt` entry expression do not start on a 16-byte
    /// boundary or cover less than one 16-byte entry (no PC-mask function
    /// can say them).
    PltLayout,
    /// The CFA is based on a register other than the stack and frame
    /// pointers (a dynamic realignment pointer, DRAP).
    CfaRegister,
    /// The return address is not where the ABI's section can say: on
    /// x86_64 anywhere but at CFA - 8, on AArch64 anywhere but saved at
    /// CFA + offset or still in x30 (in another register, by an
    /// expression).
    RaRule,
    /// The CIE's return address column is not the ABI's (x86_64: RIP, 16;
    /// AArch64: x30).
    RaColumn,
    /// The caller's frame pointer (RBP, x29) is neither in the register
    /// nor saved at CFA + offset (in another register, by an expression,
    /// `val_offset`).
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
    pub const ALL: [Reason; 13] = [
        Reason::CfaExpression,
        Reason::PltLayout,
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
            Reason::PltLayout => "plt expression off 16-byte entries",
            Reason::CfaRegister => "cfa not sp/fp based",
            Reason::RaRule => "ra rule not expressible",
            Reason::RaColumn => "ra column not the abi's",
            Reason::FpRule => "fp rule not expressible",
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

/// An FDE whose function was left out (or, for an FDE split into several
/// functions, one of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// Index of the FDE in `.eh_frame` (counting FDEs only).
    pub fde: usize,
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
    /// The object's architecture.
    pub arch: Arch,
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

/// A function to encode and the FDE it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    /// Index of the FDE in `.eh_frame` (counting FDEs only). An FDE of a
    /// `.plt` gives two functions: PLT0 and the PC-mask entries.
    pub fde: usize,
    /// The function.
    pub function: Function,
}

/// The result of reading `.eh_frame`.
#[derive(Clone, Debug, Default)]
pub struct Cfi {
    /// Number of FDEs seen.
    pub fdes: usize,
    /// Functions every row of which SFrame can express, in `.eh_frame`
    /// order (they may still overlap each other).
    pub functions: Vec<Described>,
    /// FDEs left out, and why.
    pub left_out: Vec<LeftOut>,
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

/// Where the return address is, relative to the CFA (`None`: still in the
/// link register), and whether it is signed, if the architecture's section
/// can say it ([`encode::ra_expressible`]).
fn ra_of(arch: Arch, row: &Row) -> Result<(Option<i32>, bool), Reason> {
    let at = match row.register(arch.ra()) {
        // AArch64: x30 not saved yet, or restored.
        None | Some(RegisterRule::SameValue) => None,
        Some(RegisterRule::Offset(o)) => Some(i32::try_from(o).map_err(|_| Reason::OffsetRange)?),
        Some(_) => return Err(Reason::RaRule),
    };
    let signed = arch.ra_signed(row);
    if encode::ra_expressible(arch, at, signed) {
        Ok((at, signed))
    } else {
        Err(Reason::RaRule)
    }
}

/// Where the caller's frame pointer is: `None` if still in the register,
/// else CFA + offset.
fn fp_offset_of(arch: Arch, row: &Row) -> Result<Option<i32>, Reason> {
    match row.register(arch.fp()) {
        // Callee-saved: no rule means it still holds the caller's value.
        None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => Ok(None),
        Some(RegisterRule::Offset(o)) => {
            i32::try_from(o).map(Some).map_err(|_| Reason::OffsetRange)
        }
        Some(_) => Err(Reason::FpRule),
    }
}

/// The SFrame rule of one CFI row of `arch`'s code, or why there is none.
pub fn rule_of(arch: Arch, row: &Row) -> Result<Rule, Reason> {
    // No caller: the CFA does not matter (GNU as does the same for
    // `.cfi_undefined rip`).
    if row.register(arch.ra()) == Some(RegisterRule::Undefined) {
        return Ok(Rule::Outermost);
    }
    let (cfa_base, cfa_offset) = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            let base = if *register == arch.sp() {
                CfaBase::Sp
            } else if *register == arch.fp() {
                CfaBase::Fp
            } else {
                return Err(Reason::CfaRegister);
            };
            (
                base,
                i32::try_from(*offset).map_err(|_| Reason::OffsetRange)?,
            )
        }
        CfaRule::Expression(_) => return Err(Reason::CfaExpression),
    };
    let (ra_offset, ra_signed) = ra_of(arch, row)?;
    Ok(Rule::Frame {
        cfa_base,
        cfa_offset,
        ra_offset,
        ra_signed,
        fp_offset: fp_offset_of(arch, row)?,
    })
}

/// If `expr` is the CFA expression GNU ld writes for the entries of a lazy
/// x86_64 PLT, the offset in each 16-byte entry from which the CFA is
/// RSP + 16 (below it, RSP + 8).
///
/// The expression (binutils `elf_x86_64_eh_frame_lazy_plt` and its IBT
/// variant) is
///
/// ```text
/// DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
/// DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
/// ```
///
/// that is CFA = RSP + 8 + ((RIP & 15) >= N ? 8 : 0): an entry is entered
/// by a `call` (CFA = RSP + 8) and pushes its relocation index before
/// jumping to PLT0; N is where the push ends (11 for `jmp *GOT; push;
/// jmp`, 9 for `endbr64; push; jmp`). Only this sequence of operations
/// (as gimli decodes them), with N from 1 to 15 and nothing after it, is
/// recognized; any other expression is not.
pub fn plt_push_end(expr: Expression<Slice<'_>>, encoding: gimli::Encoding) -> Option<u8> {
    let mut ops = expr.operations(encoding);
    let mut next = || ops.next().ok().flatten();
    let reg_offset = |op: Option<Operation<Slice<'_>>>, reg: gimli::Register, off: i64| {
        matches!(op, Some(Operation::RegisterOffset { register, offset, base_type })
            if register == reg && offset == off && base_type.0 == 0)
    };
    let constant = |op: Option<Operation<Slice<'_>>>| match op {
        Some(Operation::UnsignedConstant { value }) => Some(value),
        _ => None,
    };
    let ok = reg_offset(next(), X86_64::RSP, 8)
        && reg_offset(next(), X86_64::RA, 0)
        && constant(next()) == Some(15)
        && matches!(next(), Some(Operation::And));
    if !ok {
        return None;
    }
    let push_end = constant(next()).and_then(|n| u8::try_from(n).ok())?;
    let ok = (1..PLT_ENTRY_SIZE).contains(&push_end)
        && matches!(next(), Some(Operation::Ge))
        && constant(next()) == Some(3)
        && matches!(next(), Some(Operation::Shl))
        && matches!(next(), Some(Operation::Plus))
        && next().is_none();
    ok.then_some(push_end)
}

/// What one CFI row says, in SFrame terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowRule {
    /// One rule for all its bytes.
    Fixed(Rule),
    /// Lazy PLT entries (see [`plt_push_end`]): RSP + 8 before this offset
    /// of every 16-byte entry, RSP + 16 from it; RA at CFA - 8, RBP
    /// unchanged.
    Plt(u8),
}

/// The [`RowRule`] of one CFI row of `arch`'s code, or why there is none.
fn row_rule_of(
    arch: Arch,
    row: &Row,
    eh: &EhFrame<Slice<'_>>,
    encoding: gimli::Encoding,
) -> Result<RowRule, Reason> {
    let CfaRule::Expression(e) = row.cfa() else {
        return rule_of(arch, row).map(RowRule::Fixed);
    };
    if row.register(arch.ra()) == Some(RegisterRule::Undefined) {
        return Ok(RowRule::Fixed(Rule::Outermost));
    }
    // The one expression understood is x86_64's lazy PLT entries'.
    if arch != Arch::X86_64 {
        return Err(Reason::CfaExpression);
    }
    let push_end = e
        .get(eh)
        .ok()
        .and_then(|e| plt_push_end(e, encoding))
        .ok_or(Reason::CfaExpression)?;
    ra_of(arch, row)?;
    if fp_offset_of(arch, row)?.is_some() {
        return Err(Reason::FpRule);
    }
    Ok(RowRule::Plt(push_end))
}

/// Evaluate one FDE of `arch`'s code into rows (identical neighbours
/// merged): offset from the FDE's start and rule.
fn rows_of(
    arch: Arch,
    eh: &EhFrame<Slice<'_>>,
    bases: &BaseAddresses,
    ctx: &mut UnwindContext<usize>,
    fde: &FrameDescriptionEntry<Slice<'_>>,
    size: u32,
) -> Result<Vec<(u32, RowRule)>, Reason> {
    let start = fde.initial_address();
    let encoding = fde.cie().encoding();
    let mut table = fde.rows(eh, bases, ctx).map_err(|_| Reason::CfiError)?;
    let mut rows: Vec<(u32, RowRule)> = Vec::new();
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
        let rule = row_rule_of(arch, row, eh, encoding)?;
        if rows.last().is_some_and(|l| l.1 == rule) {
            continue;
        }
        if u32::try_from(rows.len()).map_or(true, |n| n >= MAX_FRES_PER_FDE) {
            return Err(Reason::TooManyRows);
        }
        rows.push((off, rule));
    }
    if rows.is_empty() {
        // All rows empty or past the end: nothing describes the code.
        return Err(Reason::CfiError);
    }
    Ok(rows)
}

/// The functions that describe the FDE at `start` of `size` bytes with
/// `rows`: one PC-increment function, unless some rows are lazy PLT
/// entries; then each run of PLT rows is a PC-mask function of 16-byte
/// blocks (it must start on a 16-byte boundary and hold one entry at
/// least, else [`Reason::PltLayout`]) and each run of other rows a
/// PC-increment function, as GNU ld describes PLT0 and the entries.
fn functions_of(
    start: u64,
    size: u32,
    signal_frame: bool,
    rows: &[(u32, RowRule)],
) -> Result<Vec<Function>, Reason> {
    let mut out: Vec<Function> = Vec::new();
    let mut i = 0;
    while let Some(&(first, rule)) = rows.get(i) {
        // The rows of this function: up to the next PLT row, or this one.
        let run = match rule {
            RowRule::Plt(_) => 1,
            RowRule::Fixed(_) => rows
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .take_while(|r| matches!(r.1, RowRule::Fixed(_)))
                .count(),
        };
        let next = i.saturating_add(run);
        let end = rows.get(next).map_or(size, |r| r.0);
        // The first function starts with the FDE (gimli's first row does).
        let first = match rule {
            RowRule::Fixed(_) if i == 0 => 0,
            RowRule::Plt(_) if i == 0 && first != 0 => return Err(Reason::PltLayout),
            _ => first,
        };
        let fn_start = start.saturating_add(u64::from(first));
        let fn_size = end.saturating_sub(first);
        let (rep_size, fres) = match rule {
            RowRule::Plt(push_end) => {
                if fn_start % u64::from(PLT_ENTRY_SIZE) != 0 || fn_size < u32::from(PLT_ENTRY_SIZE)
                {
                    return Err(Reason::PltLayout);
                }
                let at = |start, cfa_offset| Fre {
                    start,
                    rule: Rule::Frame {
                        cfa_base: CfaBase::Sp,
                        cfa_offset,
                        ra_offset: Some(-8),
                        ra_signed: false,
                        fp_offset: None,
                    },
                };
                (
                    Some(PLT_ENTRY_SIZE),
                    vec![at(0, 8), at(u32::from(push_end), 16)],
                )
            }
            RowRule::Fixed(_) => (
                None,
                rows.get(i..next)
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(|&(off, r)| match r {
                        RowRule::Fixed(rule) => Some(Fre {
                            start: off.saturating_sub(first),
                            rule,
                        }),
                        RowRule::Plt(_) => None,
                    })
                    .collect(),
            ),
        };
        out.push(Function {
            start: fn_start,
            size: fn_size,
            signal_frame,
            rep_size,
            fres,
        });
        i = next;
    }
    Ok(out)
}

/// Read every FDE of `.eh_frame` and sort its function into kept or left
/// out. Fails only if the entries of `.eh_frame` cannot be walked.
pub fn read_eh_frame(input: &EhFrameInput<'_>) -> Result<Cfi, CfiError> {
    let arch = input.arch;
    let mut eh = EhFrame::new(input.data, LittleEndian);
    eh.set_address_size(8);
    eh.set_vendor(arch.vendor());
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
    let mut fde_index = 0usize;
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
        let index = fde_index;
        fde_index = fde_index.saturating_add(1);
        out.fdes = fde_index;
        let fde = match partial.parse(EhFrame::cie_from_offset) {
            Ok(f) => f,
            Err(_) => {
                out.left_out.push(LeftOut {
                    fde: index,
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
            fde: index,
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
        if fde.cie().return_address_register() != arch.ra() {
            out.left_out.push(left_out(Reason::RaColumn));
            continue;
        }
        let signal_frame = fde.cie().is_signal_trampoline();
        match rows_of(arch, &eh, &bases, &mut ctx, &fde, size)
            .and_then(|rows| functions_of(start, size, signal_frame, &rows))
        {
            Ok(functions) => {
                out.functions
                    .extend(functions.into_iter().map(|function| Described {
                        fde: index,
                        function,
                    }))
            }
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
            arch: Arch::X86_64,
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
            ra_offset: Some(-8),
            ra_signed: false,
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
        let f = &cfi.functions[0].function;
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
        let starts: Vec<u32> = cfi.functions[0]
            .function
            .fres
            .iter()
            .map(|r| r.start)
            .collect();
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
            .map(|f| f.function.fres.iter().map(|r| (r.start, r.rule)).collect())
            .collect();
        assert_eq!(rules[0], [(0, Rule::Outermost)]);
        assert_eq!(
            rules[1],
            [(0, frame(CfaBase::Sp, 8, None)), (3, Rule::Outermost)]
        );
        assert_eq!(rules[2], [(0, frame(CfaBase::Sp, 160, None))]);
        assert!(cfi.functions[2].function.signal_frame);
        assert!(!cfi.functions[0].function.signal_frame);
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
        assert_eq!(cfi.functions[0].function.start, 0x1700);
        assert_eq!(cfi.fdes, 9);
    }

    /// The `.plt` CFA expression as GNU ld writes it (bytes as in Debian
    /// 12's libc.so.6), with `DW_OP_lit<push_end>`.
    fn plt_expr(push_end: u8) -> Expression {
        Expression::raw(vec![
            0x77,
            0x08, // DW_OP_breg7 (rsp) 8
            0x80,
            0x00,            // DW_OP_breg16 (rip) 0
            0x3f,            // DW_OP_lit15
            0x1a,            // DW_OP_and
            0x30 + push_end, // DW_OP_lit<push_end>
            0x2a,            // DW_OP_ge
            0x33,            // DW_OP_lit3
            0x24,            // DW_OP_shl
            0x22,            // DW_OP_plus
        ])
    }

    /// The FDE GNU ld writes for a lazy `.plt` of `len` bytes at `start`.
    fn plt_fde(start: u64, len: u32, push_end: u8) -> Spec {
        let ins = vec![
            (0, I::CfaOffset(16)),
            (6, I::CfaOffset(24)),
            (16, I::CfaExpression(plt_expr(push_end))),
        ];
        (start, len, ins)
    }

    fn rows(f: &Function) -> Vec<(u32, Rule)> {
        f.fres.iter().map(|r| (r.start, r.rule)).collect()
    }

    #[test]
    fn plt_is_plt0_and_a_pc_mask_function() {
        let cfi = read(&eh_frame(
            vec![plt_fde(0x1000, 0x60, 11), plt_fde(0x2000, 0x30, 9)],
            vec![],
            vec![],
        ));
        assert!(cfi.left_out.is_empty());
        assert_eq!(cfi.fdes, 2);
        let f: Vec<(usize, u64, u32, Option<u8>)> = cfi
            .functions
            .iter()
            .map(|d| {
                let f = &d.function;
                (d.fde, f.start, f.size, f.rep_size)
            })
            .collect();
        assert_eq!(
            f,
            [
                (0, 0x1000, 16, None),
                (0, 0x1010, 0x50, Some(16)),
                (1, 0x2000, 16, None),
                (1, 0x2010, 0x20, Some(16)),
            ]
        );
        let plt0 = [
            (0, frame(CfaBase::Sp, 16, None)),
            (6, frame(CfaBase::Sp, 24, None)),
        ];
        assert_eq!(rows(&cfi.functions[0].function), plt0);
        assert_eq!(
            rows(&cfi.functions[1].function),
            [
                (0, frame(CfaBase::Sp, 8, None)),
                (11, frame(CfaBase::Sp, 16, None)),
            ]
        );
        // The IBT variant (endbr64; push; jmp): the push ends at 9.
        assert_eq!(
            rows(&cfi.functions[3].function),
            [
                (0, frame(CfaBase::Sp, 8, None)),
                (9, frame(CfaBase::Sp, 16, None)),
            ]
        );
    }

    #[test]
    fn plt_rows_between_other_rows() {
        // Code before and after the entries, in the same FDE: three
        // functions.
        let ins = vec![
            (4, I::CfaOffset(16)),
            (16, I::CfaExpression(plt_expr(11))),
            (48, I::Cfa(X86_64::RSP, 32)),
        ];
        let cfi = read(&eh_frame(vec![(0x1000, 56, ins)], vec![], vec![]));
        assert!(cfi.left_out.is_empty());
        type Summary = (u64, u32, Option<u8>, Vec<(u32, Rule)>);
        let f: Vec<Summary> = cfi
            .functions
            .iter()
            .map(|d| {
                (
                    d.function.start,
                    d.function.size,
                    d.function.rep_size,
                    rows(&d.function),
                )
            })
            .collect();
        assert_eq!(
            f,
            [
                (
                    0x1000,
                    16,
                    None,
                    vec![
                        (0, frame(CfaBase::Sp, 8, None)),
                        (4, frame(CfaBase::Sp, 16, None))
                    ]
                ),
                (
                    0x1010,
                    32,
                    Some(16),
                    vec![
                        (0, frame(CfaBase::Sp, 8, None)),
                        (11, frame(CfaBase::Sp, 16, None))
                    ]
                ),
                (0x1030, 8, None, vec![(0, frame(CfaBase::Sp, 32, None))]),
            ]
        );
    }

    #[test]
    fn other_expressions_and_plt_layouts_are_left_out() {
        // Near misses of the PLT expression, one change each.
        let mut variants: Vec<Vec<u8>> = Vec::new();
        let base: Vec<u8> = vec![
            0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
        ];
        for (i, v) in [
            (1, 0x10),  // breg7 16
            (0, 0x76),  // breg6 (rbp)
            (3, 0x04),  // breg16 4
            (4, 0x3e),  // lit14
            (5, 0x1b),  // div for and
            (6, 0x30),  // lit0: no push
            (6, 0x40),  // lit16
            (7, 0x29),  // eq for ge
            (8, 0x32),  // lit2
            (9, 0x25),  // shr
            (10, 0x1c), // minus
        ] {
            let mut b = base.clone();
            b[i] = v;
            variants.push(b);
        }
        let mut longer = base.clone();
        longer.push(0x06); // deref after
        variants.push(longer);
        variants.push(base[..10].to_vec()); // no plus
        let mut specs: Vec<Spec> = variants
            .into_iter()
            .enumerate()
            .map(|(k, b)| {
                (
                    0x1000 + 0x100 * k as u64,
                    0x40,
                    vec![(16, I::CfaExpression(Expression::raw(b)))],
                )
            })
            .collect();
        let n = specs.len();
        // The right expression, but the entries start off a 16-byte
        // boundary, or there is less than one entry; RBP saved.
        specs.push((0x8008, 0x40, vec![(16, I::CfaExpression(plt_expr(11)))]));
        specs.push((0x9000, 0x18, vec![(16, I::CfaExpression(plt_expr(11)))]));
        specs.push((0xa000, 0x18, vec![(0, I::CfaExpression(plt_expr(11)))]));
        specs.push((
            0xb000,
            0x40,
            vec![
                (0, I::Offset(X86_64::RBP, -16)),
                (16, I::CfaExpression(plt_expr(11))),
            ],
        ));
        let cfi = read(&eh_frame(specs, vec![], vec![]));
        let got: Vec<(u64, Reason)> = cfi.left_out.iter().map(|l| (l.start, l.reason)).collect();
        let mut want: Vec<(u64, Reason)> = (0..n)
            .map(|k| (0x1000 + 0x100 * k as u64, Reason::CfaExpression))
            .collect();
        want.extend([
            (0x8008, Reason::PltLayout),
            (0x9000, Reason::PltLayout),
            (0xb000, Reason::FpRule),
        ]);
        // One entry of 0x18 bytes from 0: a PC-mask function of 24 bytes.
        assert_eq!(got, want);
        assert_eq!(cfi.functions.len(), 1);
        assert_eq!(cfi.functions[0].function.start, 0xa000);
        assert_eq!(cfi.functions[0].function.rep_size, Some(16));
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
            arch: Arch::X86_64,
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
                arch: Arch::X86_64,
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
                    arch: Arch::X86_64,
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
