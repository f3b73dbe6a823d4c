// SPDX-License-Identifier: GPL-2.0

//! The rule cache: what each PC of an address space unwinds with, kept from
//! one walk to the next so that a frame seen before costs neither a search
//! of the registry nor a read of a section; and the frame rule of an SFrame
//! row ([`rule`]), the one translation from which both the step's frame
//! and the cache's word ([`CachedRule::word`]) are derived.

use crate::{
    memory::gfp,
    word::{read_once, write_once, xchg_full, Bits},
};
use kernel::{
    alloc::KBox,
    bindings,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};
use sframe::{Base, RegRule, Row};

/// What user.c should do with a frame an SFrame row describes.
pub(crate) enum Rule {
    /// Apply this frame rule.
    Frame(bindings::unwind_user_frame),
    /// The row marks the outermost frame: the walk ends here, cleanly.
    Outermost,
}

/// Translates an SFrame row into the generic step's frame rule, or `None`
/// if the row needs more than it can express (a CFA or register rule based
/// on a register other than SP and FP, or a dereferenced CFA).
pub(crate) fn rule(row: &Row) -> Option<Rule> {
    if row.outermost || row.ra == RegRule::Undefined {
        return Some(Rule::Outermost);
    }
    if row.cfa.deref {
        return None;
    }
    let use_fp = match row.cfa.base {
        Base::Sp => false,
        Base::Fp => true,
        _ => return None,
    };
    let fp_off = match row.fp {
        RegRule::CfaOffset(off) if off != 0 => off,
        RegRule::SameValue => 0,
        _ => return None,
    };
    let mut frame = bindings::unwind_user_frame {
        cfa_off: row.cfa.offset,
        fp_off,
        use_fp,
        ..Default::default()
    };
    match row.ra {
        RegRule::CfaOffset(off) => frame.ra_off = off,
        // AArch64: not saved yet (a leaf, a prologue), still in x30, which
        // the generic step reads only for an interrupted frame.
        #[cfg(target_arch = "aarch64")]
        RegRule::SameValue => frame.ra_in_reg = true,
        _ => return None,
    }
    Some(Rule::Frame(frame))
}

/// The fields of an address space's generation word: whether its table
/// has an entry, and the generation, advanced on every change a cached rule
/// may depend on (of which a cache slot keeps the low 7 bits).
pub(crate) const GEN_REGISTERED: Bits = Bits::new(0, 1);
pub(crate) const GEN_COUNT: Bits = Bits::new(1, 63);
const _: () = assert!(Bits::disjoint(&[GEN_REGISTERED, GEN_COUNT]));

/// A plain frame's rule as the rule cache keeps it: where the return
/// address and the caller's FP are as the architecture's frames keep them
/// (see [`CachedRule::word`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CachedRule {
    /// CFA = SP (or FP, with `use_fp`) + `cfa_off`.
    pub(crate) cfa_off: i32,
    /// The return address at CFA + `ra_off`.
    pub(crate) ra_off: i32,
    /// The caller's FP at CFA + `fp_off`; 0: FP is not saved.
    pub(crate) fp_off: i32,
    /// The CFA is based on FP.
    pub(crate) use_fp: bool,
}

impl CachedRule {
    /// The fields of its [`word`](Self::word): the CFA offset in words
    /// (signed), where the saved registers are ([`Self::saved`]), whether
    /// the CFA is based on FP.
    const CFA_WORDS: Bits = Bits::new(7, 9);
    const SAVED: Bits = Bits::new(1, 6);
    const USE_FP: Bits = Bits::new(0, 1);

    /// The [`SAVED`](Self::SAVED) field of the rule, signed, if it has
    /// one. x86-64: the FP's offset in words (0: not saved), the return
    /// address being at CFA - 8, where `call` pushes it. AArch64, where
    /// compilers save x30 in a frame record `{x29, x30}` (x29 first) or,
    /// without frame pointers, alone, near the top or the bottom of the
    /// frame (the bottom: the CFA minus its offset):
    ///
    /// - -32 to -1: a record, x29 at that many words from the CFA;
    /// - 0 to 15: a record, x29 at that many words above the bottom;
    /// - 16 to 31: x30 alone, at that many words minus 16 above the bottom.
    #[inline]
    fn saved(self) -> Option<i64> {
        if self.cfa_off % 8 != 0 || self.fp_off % 8 != 0 || self.ra_off % 8 != 0 {
            return None;
        }
        let cfa = i64::from(self.cfa_off / 8);
        let (fp, ra) = (i64::from(self.fp_off / 8), i64::from(self.ra_off / 8));
        let v = if cfg!(target_arch = "aarch64") {
            let above_bottom = |off: i64| Some(off + cfa).filter(|k| (0..16).contains(k));
            match (fp, ra) {
                (0, ra) => above_bottom(ra)? + 16,
                (fp, ra) if ra != fp + 1 => return None,
                (fp, _) if (-32..0).contains(&fp) => fp,
                (fp, _) => above_bottom(fp)?,
            }
        } else if ra == -1 {
            fp
        } else {
            return None;
        };
        Self::SAVED.fits_signed(v).then_some(v)
    }

    /// The (`fp_off`, `ra_off`) of [`saved`](Self::saved) field `v` in a
    /// rule whose CFA is at `cfa_off`.
    #[inline(always)]
    fn of_saved(v: i32, cfa_off: i32) -> (i32, i32) {
        if cfg!(target_arch = "aarch64") {
            let fp = match v {
                16.. => return (0, (v - 16) * 8 - cfa_off),
                0.. => v * 8 - cfa_off,
                _ => v * 8,
            };
            (fp, fp + 8)
        } else {
            (v * 8, -8)
        }
    }

    /// The rule as a slot of the cache holds it (its bits 15-0, see
    /// [`RuleCache`]); `None` if it does not fit, and then is not cached.
    #[inline]
    pub(crate) fn word(self) -> Option<u16> {
        let cfa = i64::from(self.cfa_off / 8);
        let fits = self.cfa_off != 0 && self.cfa_off % 8 == 0 && Self::CFA_WORDS.fits_signed(cfa);
        let saved = self.saved().filter(|_| fits)?;
        let w = Self::CFA_WORDS.put_signed(cfa)
            | Self::SAVED.put_signed(saved)
            | Self::USE_FP.put(self.use_fp.into());
        // The fields are bits 15-0 (`RuleCache::RULE`): the cast loses none.
        Some(w as u16)
    }

    /// The rule a [`word`](Self::word) holds.
    #[inline(always)]
    pub(crate) fn from_word(w: u16) -> CachedRule {
        let w = u64::from(w);
        // Fields of 9 and 6 bits, times 8: the casts lose nothing.
        let cfa_off = Self::CFA_WORDS.get_signed(w) as i32 * 8;
        let (fp_off, ra_off) = Self::of_saved(Self::SAVED.get_signed(w) as i32, cfa_off);
        CachedRule {
            cfa_off,
            ra_off,
            fp_off,
            use_fp: Self::USE_FP.get(w) != 0,
        }
    }

    /// The rule of frame rule `f`, if it has one ([`word`](Self::word)
    /// tells whether it fits): [`frame`](Self::frame) undone.
    pub(crate) fn of_frame(f: &bindings::unwind_user_frame) -> Option<CachedRule> {
        // A return address in x30 is not on the stack at all.
        #[cfg(target_arch = "aarch64")]
        if f.ra_in_reg {
            return None;
        }
        Some(CachedRule {
            cfa_off: f.cfa_off,
            ra_off: f.ra_off,
            fp_off: f.fp_off,
            use_fp: f.use_fp,
        })
    }

    /// The frame rule for the generic step.
    #[inline(always)]
    pub(crate) fn frame(self) -> bindings::unwind_user_frame {
        bindings::unwind_user_frame {
            cfa_off: self.cfa_off,
            ra_off: self.ra_off,
            fp_off: self.fp_off,
            use_fp: self.use_fp,
            ..Default::default()
        }
    }
}

/// What the rule cache knows of a PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cached {
    /// The frame's rule.
    Rule(CachedRule),
    /// No section covers the PC, or its row leaves the frame to the frame
    /// pointer (and the PC is not the signal trampoline): the frame-pointer
    /// rule gets the frame.
    FramePointer,
    /// As [`Cached::FramePointer`], for a return address found in
    /// executable memory by a walk that may sleep: when the frame-pointer
    /// rule reads it again, it needs no VMA lookup.
    FramePointerInCode,
    /// The PC is in a section's text but no row describes it, and the
    /// section does not say its code keeps frame pointers: the walk ends.
    End,
}

impl Cached {
    /// The [`word`](Self::word) of [`Cached::FramePointer`], ...
    pub(crate) const FRAME_POINTER: u16 = 0;
    /// ... of [`Cached::End`], ...
    pub(crate) const END: u16 = 1;
    /// ... and of [`Cached::FramePointerInCode`]; a rule's is larger.
    pub(crate) const FRAME_POINTER_IN_CODE: u16 = 2;

    /// What a slot of the cache holds for it (its bits 15-0); `None` for
    /// a rule that does not fit.
    pub(crate) fn word(self) -> Option<u16> {
        match self {
            Cached::FramePointer => Some(Self::FRAME_POINTER),
            Cached::End => Some(Self::END),
            Cached::FramePointerInCode => Some(Self::FRAME_POINTER_IN_CODE),
            Cached::Rule(r) => r.word(),
        }
    }

    /// What a step gives a PC in the text of a section with `header` that
    /// no row describes, unless the PC is the signal trampoline: the walk
    /// ends there, or, if the section says its code keeps frame pointers,
    /// the frame-pointer rule takes the frame (of a return address that is
    /// code: it is in the section's text).
    pub(crate) fn no_row(header: &sframe::Header) -> Cached {
        if header.keeps_frame_pointers() {
            Cached::FramePointerInCode
        } else {
            Cached::End
        }
    }

    /// What a [`word`](Self::word) holds. A rule first: one compare tells
    /// it from the others, on the path of every cached frame.
    #[inline(always)]
    pub(crate) fn from_word(w: u16) -> Cached {
        if w > Self::FRAME_POINTER_IN_CODE {
            return Cached::Rule(CachedRule::from_word(w));
        }
        match w {
            Self::FRAME_POINTER => Cached::FramePointer,
            Self::END => Cached::End,
            _ => Cached::FramePointerInCode,
        }
    }
}

/// A cache from PC to frame rule, one per address space: return addresses
/// repeat across samples, and a hit costs neither a search of the registry
/// nor a read of a section, so that the steady state of a walk reads only
/// the stack, like the frame-pointer walk.
///
/// Every registry change (a new table, an entry found malformed) advances
/// the address space's generation and empties the cache, and an entry
/// holds the generation it was computed in: a walk takes only entries of
/// the generation it started with (or last looked up in), so none outlives
/// the registration it came from, even one a racing reader stored after
/// the cache was emptied.
///
/// Four-way set-associative, 128 sets: a PC is stored in the first way of
/// its set, whose entries move one way down, up to the first empty slot
/// or the PC's own old entry. Each slot is one 64-bit word,
/// read and written whole, so that readers and writers on any CPU, NMI
/// included, never see half an entry. Bits 63-16 are the key: the PC's bits
/// 47-7 (the set, picked by a hash of the PC, says the rest), the
/// generation's low 6 bits and whether the PC is a return address minus
/// one; bits 15-7 are the CFA offset in words (9 bits, signed), bits 6-1
/// where the FP and the return address are saved (6 bits, signed, as
/// [`CachedRule::word`] says), bit 0 whether the CFA is based on FP. A rule with a CFA offset of 0 (which the step refuses anyway)
/// means [`Cached::FramePointer`], [`Cached::End`] with bit 0 set, or
/// [`Cached::FramePointerInCode`] with bit 1 set. A rule that does not fit
/// is not cached;
/// a PC below the first page or above 2^48 (arm64's user addresses have
/// 48 bits, x86-64's 47) is not cached. An empty slot
/// (0) reads as [`Cached::FramePointer`] for a PC below 128, which is what
/// the step gives such a PC anyway: the probe need not check for it.
pub(crate) struct RuleCache([Atomic<u64>; RuleCache::SETS * RuleCache::WAYS]);

const _: () = assert!(Bits::disjoint(&[
    RuleCache::RULE,
    RuleCache::ADJ,
    RuleCache::GEN,
    RuleCache::PC
]));
const _: () = assert!(RuleCache::KEY.mask() == !RuleCache::RULE.mask());
const _: () = assert!(Bits::disjoint(&[
    CachedRule::CFA_WORDS,
    CachedRule::SAVED,
    CachedRule::USE_FP
]));
const _: () = assert!(
    (CachedRule::CFA_WORDS.mask() | CachedRule::SAVED.mask() | CachedRule::USE_FP.mask())
        == RuleCache::RULE.mask()
);

// One 4 KiB kmalloc() a registry: a byte more would take 8 KiB.
const _: () = assert!(core::mem::size_of::<RuleCache>() == 4096);

impl RuleCache {
    const SETS: usize = 128;
    const WAYS: usize = 4;

    /// The fields of a slot (see above): the rule, whether the PC is a
    /// return address minus one, the generation's low 7 bits, the PC's
    /// bits 47-7; all but the rule are the key. (The generation's low bits
    /// only tell an entry a racing walk stored after the cache was emptied,
    /// which [`SframeMm`](crate::registry::SframeMm)'s store takes back
    /// once it sees the generation it stored with is gone.)
    const RULE: Bits = Bits::new(0, 16);
    const ADJ: Bits = Bits::new(16, 1);
    const GEN: Bits = Bits::new(17, 6);
    const PC: Bits = Bits::new(23, 41);
    const KEY: Bits = Bits::new(16, 48);

    /// An empty cache.
    pub(crate) fn new() -> Result<KBox<Self>> {
        Ok(KBox::new(
            RuleCache(core::array::from_fn(|_| Atomic::new(0))),
            gfp(),
        )?)
    }

    /// The key of `pc` (`adj`: a return address minus one) in generation
    /// `gen`, in place (bits 63-16; the rule's bits clear); `None` for a PC
    /// above 2^48, which the cache does not hold.
    #[inline(always)]
    fn key(pc: usize, adj: bool, gen: u64) -> Option<u64> {
        let pc = pc as u64;
        if pc >> 48 != 0 {
            return None;
        }
        // The set says the PC's low 7 bits; the slot keeps the
        // generation's low 6 bits.
        Some(Self::PC.put(pc >> 7) | Self::GEN.put(GEN_COUNT.get(gen)) | Self::ADJ.put(adj.into()))
    }

    /// Whether slot `w` holds `key`'s entry: all of its bits but the rule.
    #[inline(always)]
    fn holds(w: u64, key: u64) -> bool {
        Self::KEY.get(w ^ key) == 0
    }

    /// The ways of the set of `pc`, first to last.
    fn ways(&self, pc: usize) -> &[Atomic<u64>] {
        let i = Self::set(pc) * Self::WAYS;
        self.0.get(i..i + Self::WAYS).unwrap_or(&[])
    }

    /// The set of `pc`: its low 7 bits xor the next 7, which the key holds,
    /// so that the set and the key give back the whole PC. Return addresses
    /// differ in their low bits; folding in the next ones keeps those of
    /// functions 128 bytes apart out of one set.
    fn set(pc: usize) -> usize {
        (pc ^ pc >> 7) & 0x7f
    }

    /// What `pc` (`adj`: a return address minus one) unwinds with, if it
    /// was stored in generation `gen`. Lock-free, in any context.
    #[inline(always)]
    pub(crate) fn get(&self, pc: usize, adj: bool, gen: u64) -> Option<Cached> {
        self.get_word(pc, adj, gen).map(Cached::from_word)
    }

    /// [`get`](Self::get)'s answer as its [`word`](Cached::word).
    #[inline(always)]
    pub(crate) fn get_word(&self, pc: usize, adj: bool, gen: u64) -> Option<u16> {
        let key = Self::key(pc, adj, gen)?;
        let w = self
            .ways(pc)
            .iter()
            .map(read_once)
            .find(|&w| Self::holds(w, key))?;
        // The rule is bits 15-0: the cast keeps it whole.
        Some(Self::RULE.get(w) as u16)
    }

    /// Stores what `pc` unwinds with, `word` ([`Cached::word`]), in
    /// generation `gen`, and returns the slot it went to, the word stored
    /// there, and whether it replaced an entry for `pc` of that generation.
    /// The store into that slot is a full barrier: any load after it is
    /// ordered after it. (Not the moves of older entries to the next ways,
    /// which keep their generations: an older entry is never taken by a
    /// walk of a newer one.)
    #[inline]
    pub(crate) fn put(
        &self,
        pc: usize,
        adj: bool,
        gen: u64,
        word: u16,
    ) -> Option<(&Atomic<u64>, u64, bool)> {
        let rule = Self::RULE.put(word.into());
        let key = Self::key(pc, adj, gen).filter(|_| pc >= kernel::page::PAGE_SIZE)?;
        // The new entry goes first; the ones before its old place, or
        // before the first empty slot (or all but the last), move one way
        // down. A cold walk, whose sets are mostly empty, writes one slot.
        // Racing writers may lose an entry or store one twice: either only
        // costs a later lookup.
        let mut ways = self.ways(pc).iter();
        let first = ways.next()?;
        let mut carry = xchg_full(first, key | rule);
        let mut replaced = Self::holds(carry, key);
        for way in ways {
            if carry == 0 || replaced {
                break;
            }
            let old = read_once(way);
            write_once(way, carry);
            replaced = Self::holds(old, key);
            carry = old;
        }
        Some((first, key | rule, replaced))
    }

    /// Empties the cache.
    pub(crate) fn clear(&self) {
        for slot in &self.0 {
            slot.store(0, Relaxed);
        }
    }
}

#[kunit_tests(unwind_user_rule_cache)]
mod tests {
    use super::*;
    use crate::{registry::SframeMm, section::fixtures::*};
    use kernel::error::code::ENOENT;

    /// What a walk starting now finds cached for `pc`.
    fn cached(mm: &SframeMm, pc: usize) -> Option<Cached> {
        mm.cached(pc, true, mm.gen())
    }

    /// Caches `c` for `pc` as a walk starting now would.
    fn remember(mm: &SframeMm, pc: usize, c: Cached) {
        mm.remember(pc, true, mm.lookup(pc).gen, c)
    }

    #[test]
    fn rule_cache() -> Result {
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(sec(0x1000, 0x1000), none()?)?;
        // The frame-pointer rule's return addresses in a registered text
        // need no VMA lookup.
        assert!(mm.covers(0x1000) && mm.covers(0x1fff));
        assert!(!mm.covers(0xfff) && !mm.covers(0x2000));
        let rule = CachedRule {
            cfa_off: 16,
            ra_off: -8,
            fp_off: -16,
            use_fp: true,
        };
        // Remembered for its PC only, and for return addresses only.
        remember(&mm, 0x1800, Cached::Rule(rule));
        assert_eq!(cached(&mm, 0x1800), Some(Cached::Rule(rule)));
        assert_eq!(cached(&mm, 0x1801), None);
        assert_eq!(cached(&mm, 0x1800 + (1 << 32)), None);
        assert_eq!(mm.cached(0x1800, false, mm.gen()), None);
        // Negative and largest offsets survive the packing; what does not
        // fit is not cached. x86-64: the return address at CFA - 8.
        let r = |cfa_off, ra_off, fp_off, use_fp| CachedRule {
            cfa_off,
            ra_off,
            fp_off,
            use_fp,
        };
        #[cfg(not(target_arch = "aarch64"))]
        let (fit, no_fit) = (
            [
                r(-2048, -8, -256, false),
                r(2040, -8, 248, true),
                r(8, -8, 0, false),
            ],
            [r(16, -16, -16, true)],
        );
        // AArch64: above the saved FP (a frame record), or alone; near the
        // top of the frame, or near its bottom.
        #[cfg(target_arch = "aarch64")]
        let (fit, no_fit) = (
            [
                r(-2048, -248, -256, false),
                r(8, -8, 0, false),
                r(32, -24, -32, true),
                r(2040, -2032, -2040, false),
                r(1120, -1112, -1120, true),
                r(1152, -1112, -1120, false),
                r(336, -328, 0, false),
                r(1104, -1056, 0, false),
            ],
            [
                r(16, -8, 248, true),
                r(16, -16, -16, true),
                r(2040, -8, 0, false),
                r(1152, -1000, -1008, false),
            ],
        );
        for r in fit {
            remember(&mm, 0x1900, Cached::Rule(r));
            assert_eq!(cached(&mm, 0x1900), Some(Cached::Rule(r)));
        }
        for r in no_fit {
            remember(&mm, 0x1a00, Cached::Rule(r));
            assert_eq!(cached(&mm, 0x1a00), None);
        }
        for r in [
            CachedRule {
                cfa_off: 2048,
                ra_off: -8,
                fp_off: 0,
                use_fp: false,
            },
            CachedRule {
                cfa_off: 20,
                ra_off: -8,
                fp_off: 0,
                use_fp: false,
            },
            CachedRule {
                cfa_off: 16,
                ra_off: -8,
                fp_off: -12,
                use_fp: true,
            },
            // CFA = SP: the step refuses it; the slot means "no section".
            CachedRule {
                cfa_off: 0,
                ra_off: -8,
                fp_off: 0,
                use_fp: false,
            },
        ] {
            remember(&mm, 0x1a00, Cached::Rule(r));
            assert_eq!(cached(&mm, 0x1a00), None);
        }
        remember(&mm, 0x9000, Cached::FramePointer);
        assert_eq!(cached(&mm, 0x9000), Some(Cached::FramePointer));
        remember(&mm, 0x9100, Cached::End);
        assert_eq!(cached(&mm, 0x9100), Some(Cached::End));
        remember(&mm, 0x9180, Cached::FramePointerInCode);
        assert_eq!(cached(&mm, 0x9180), Some(Cached::FramePointerInCode));
        // A rule with a CFA of FP + 0 does not fit: it cannot be taken for
        // the end of a walk (its bits would read as one).
        remember(
            &mm,
            0x9200,
            Cached::Rule(CachedRule {
                cfa_off: 0,
                ra_off: -8,
                fp_off: 0,
                use_fp: true,
            }),
        );
        assert_eq!(cached(&mm, 0x9200), None);
        // Any registry change starts a new generation: what was cached, or
        // found before it, is not taken by walks that start after it, and
        // the cache is emptied for them.
        let gen = mm.lookup(0x1800).gen;
        remember(&mm, 0x1800, Cached::Rule(rule));
        mm.add(sec(0x8000, 0x1000), none()?)?;
        assert_eq!(cached(&mm, 0x1800), None);
        assert_eq!(mm.cached(0x1800, true, gen), None);
        mm.remember(0x1800, true, gen, Cached::Rule(rule));
        assert_eq!(cached(&mm, 0x1800), None);
        assert_eq!(mm.cached(0x1800, true, gen), None);
        // A walk that started before keeps to its own generation.
        remember(&mm, 0x1800, Cached::Rule(rule));
        assert_eq!(mm.cached(0x1800, true, gen), None);
        assert_eq!(cached(&mm, 0x1800), Some(Cached::Rule(rule)));
        mm.remove(0x8000)?;
        assert_eq!(cached(&mm, 0x1800), None);

        // PCs up to 2^48 (arm64's libraries are mapped near its top) are
        // kept, each apart; beyond it none is.
        let high = (1usize << 47) + 0x1800;
        remember(&mm, high, Cached::Rule(rule));
        assert_eq!(cached(&mm, high), Some(Cached::Rule(rule)));
        assert_eq!(cached(&mm, 0x1800), None);
        remember(&mm, (1 << 48) + 0x1800, Cached::FramePointer);
        assert_eq!(cached(&mm, (1 << 48) + 0x1800), None);
        mm.add(sec(0x8000, 0x1000), none()?)?;
        mm.remove(0x8000)?;

        // In the cache this change emptied: four PCs of one set are all
        // kept, a fifth evicts the oldest; one stored again keeps one
        // place, the first.
        let mut same_set =
            (0x2000..0x100000).filter(|&p| RuleCache::set(p) == RuleCache::set(0x1800));
        let mut p = [0x1800; 6];
        for q in p.iter_mut().skip(1) {
            *q = same_set.next().ok_or(ENOENT)?;
        }
        for &q in &p[..4] {
            remember(&mm, q, Cached::FramePointer);
        }
        remember(&mm, p[1], Cached::Rule(rule));
        assert_eq!(cached(&mm, p[0]), Some(Cached::FramePointer));
        assert_eq!(cached(&mm, p[1]), Some(Cached::Rule(rule)));
        remember(&mm, p[4], Cached::FramePointer);
        assert_eq!(cached(&mm, p[0]), None);
        for &q in &p[1..5] {
            assert!(cached(&mm, q).is_some());
        }
        remember(&mm, p[5], Cached::FramePointer);
        assert_eq!(cached(&mm, p[2]), None);
        assert_eq!(cached(&mm, p[1]), Some(Cached::Rule(rule)));
        Ok(())
    }

    /// A frame rule's return address as the cache keeps it: an AArch64
    /// frame record at the bottom of a 32-byte frame (x30 above x29) is
    /// cached on arm64 only, the usual frame of both everywhere.
    #[test]
    fn frame_rules_through_the_cache() {
        let through = |cfa_off, ra_off, fp_off| {
            let f = bindings::unwind_user_frame {
                cfa_off,
                ra_off,
                fp_off,
                ..Default::default()
            };
            let w = CachedRule::of_frame(&f)?.word()?;
            let back = CachedRule::from_word(w).frame();
            Some((back.cfa_off, back.ra_off, back.fp_off))
        };
        let record = through(32, -24, -32);
        if cfg!(target_arch = "aarch64") {
            assert_eq!(record, Some((32, -24, -32)));
        } else {
            assert_eq!(record, None);
        }
        assert_eq!(through(16, -8, -16), Some((16, -8, -16)));
        assert_eq!(through(16, -8, 0), Some((16, -8, 0)));
    }

    #[test]
    fn a_store_into_an_empty_way_moves_nothing() -> Result {
        let cache = RuleCache::new()?;
        let gen = 2;
        let mut same_set =
            (0x2000..0x100000).filter(|&p| RuleCache::set(p) == RuleCache::set(0x1800));
        let mut p = [0x1800; 5];
        for q in p.iter_mut().skip(1) {
            *q = same_set.next().ok_or(ENOENT)?;
        }
        let end = Cached::End.word().ok_or(ENOENT)?;
        for &q in &p[..4] {
            cache.put(q, true, gen, end);
        }
        // The newest first, p[3], taken back (a store a registry change
        // overtook): a store into its empty way moves nothing.
        cache.ways(p[0]).first().ok_or(ENOENT)?.store(0, Relaxed);
        assert_eq!(cache.get(p[3], true, gen), None);
        cache.put(p[4], true, gen, end);
        for &q in [p[0], p[1], p[2], p[4]].iter() {
            assert_eq!(cache.get(q, true, gen), Some(Cached::End));
        }
        Ok(())
    }
}
