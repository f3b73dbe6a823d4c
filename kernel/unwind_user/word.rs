// SPDX-License-Identifier: GPL-2.0

//! What the step synchronises with, in line: lock-free words read and
//! written as `READ_ONCE()`, `WRITE_ONCE()` and `xchg()` do (the rule
//! cache's slots and the registry's generation, which every step reads),
//! and preemption turned off for a few instructions ([`NoPreempt`]); and
//! the fields of such words, declared once ([`Bits`]).

use kernel::{
    bindings,
    sync::atomic::{Atomic, AtomicType},
};

// The unwinder builds for x86-64 and arm64 (Kconfig), where an aligned
// load or store of at most 8 bytes is single-copy atomic: what
// `read_once()` and `write_once()` rely on.
const _: () = assert!(cfg!(any(target_arch = "x86_64", target_arch = "aarch64")));

/// Reads `a` as `READ_ONCE()` does, in line. [`Atomic::load`] calls an
/// out-of-line C helper (`atomic64_read()`, `atomic_ptr_read()`, ...), and
/// a probe of up to four of them is most of what a cached frame costs:
/// each call makes the step save and restore the registers it lives in.
#[inline(always)]
pub(crate) fn read_once<T: AtomicType>(a: &Atomic<T>) -> T {
    // SAFETY: `a.as_ptr()` is valid and aligned for a `T` as long as `a`
    // lives, and holds a valid `T` (`Atomic` stores only `T`s). A `T` is
    // the size of its representation, an integer of at most 8 bytes. On
    // x86-64 and arm64 an aligned volatile load of at most 8 bytes is one
    // `mov` or `ldr`, atomic against every writer of the word, which writes
    // it whole (`write_once()`, `Atomic::store()`, `xchg()` and
    // `cmpxchg()`): this is `READ_ONCE()`, as in `File::flags()`.
    unsafe { a.as_ptr().read_volatile() }
}

/// Reads `a` as `smp_load_acquire()` does, in line (see [`read_once`]): no
/// later load or store of this CPU is ordered before it.
#[inline(always)]
pub(crate) fn read_acquire<T: AtomicType>(a: &Atomic<T>) -> T {
    #[cfg(target_arch = "x86_64")]
    {
        // x86-64 orders a load before any later load or store: a compiler
        // barrier after `READ_ONCE()` is all an acquire needs.
        let v = read_once(a);
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::Acquire);
        v
    }
    #[cfg(target_arch = "aarch64")]
    {
        const { assert!(size_of::<T>() == 8) };
        let v: u64;
        // SAFETY: `a.as_ptr()` is valid and aligned for a `T`, 8 bytes (the
        // assertion above), as long as `a` lives. `ldar` is a single-copy
        // atomic load-acquire, as `smp_load_acquire()` of 8 bytes is on
        // arm64. The asm may read and write any memory (no `readonly` or
        // `nomem`), so the compiler moves no access across it either.
        unsafe {
            kernel::asm!(
                "ldar {v}, [{p}]";
                v = out(reg) v,
                p = in(reg) a.as_ptr(),
                options(nostack, preserves_flags)
            );
        }
        // SAFETY: `v` is the 8 bytes of a `T` that `a` held (`Atomic`
        // stores only `T`s), and a `T` is 8 bytes.
        unsafe { core::mem::transmute_copy(&v) }
    }
}

/// Stores `v` in `a` as `WRITE_ONCE()` does, in line (see [`read_once`]).
#[inline(always)]
pub(crate) fn write_once(a: &Atomic<u64>, v: u64) {
    // SAFETY: As in `read_once()`: an aligned 8-byte volatile store is one
    // `mov` or `str`, which readers on any CPU see whole or not at all.
    unsafe { a.as_ptr().write_volatile(v) }
}

/// Swaps `v` into `a` and returns what `a` held, as `xchg()` does, and so
/// a full memory barrier: in line on x86-64 (see [`read_once`] for why
/// not [`Atomic::xchg`]).
#[inline(always)]
pub(crate) fn xchg_full(a: &Atomic<u64>, v: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut v = v;
        // SAFETY: `a.as_ptr()` is valid and aligned for a `u64` as long as
        // `a` lives. On x86-64, `xchg` with a memory operand is locked:
        // atomic against every other access of the word, and a full
        // barrier, as the kernel's `xchg()` is. It changes no flag. The asm
        // may read and write any memory, so the compiler orders every
        // access around it as well.
        unsafe {
            kernel::asm!(
                "xchg {v}, ({p})";
                v = inout(reg) v,
                p = in(reg) a.as_ptr(),
                options(nostack, preserves_flags)
            );
        }
        v
    }
    #[cfg(not(target_arch = "x86_64"))]
    a.xchg(v, kernel::sync::atomic::Full)
}

/// Bits `shift..shift + width` of a 64-bit word: one field of a word that
/// is read and written whole. Each packed word declares its fields once, as
/// `const`s beside its description, and [`Bits::disjoint`] checks at build
/// time that they do not overlap.
#[derive(Clone, Copy)]
pub(crate) struct Bits {
    shift: u32,
    width: u32,
}

impl Bits {
    /// Bits `shift..shift + width`; a build error where used in a `const`
    /// if they are not bits of a `u64`.
    pub(crate) const fn new(shift: u32, width: u32) -> Bits {
        assert!(width > 0 && width <= 64 && shift <= 64 - width);
        Bits { shift, width }
    }

    /// The field's bits, in place.
    #[inline(always)]
    pub(crate) const fn mask(self) -> u64 {
        (u64::MAX >> (64 - self.width)) << self.shift
    }

    /// The field of `w`.
    #[inline(always)]
    pub(crate) const fn get(self, w: u64) -> u64 {
        (w & self.mask()) >> self.shift
    }

    /// The field of `w`, sign-extended.
    #[inline(always)]
    pub(crate) const fn get_signed(self, w: u64) -> i64 {
        ((w << (64 - self.shift - self.width)) as i64) >> (64 - self.width)
    }

    /// The low `width` bits of `v`: what the field keeps of it.
    #[inline(always)]
    pub(crate) const fn low(self, v: u64) -> u64 {
        v & (self.mask() >> self.shift)
    }

    /// The low `width` bits of `v` in place, the rest of the word clear.
    #[inline(always)]
    pub(crate) const fn put(self, v: u64) -> u64 {
        (v << self.shift) & self.mask()
    }

    /// `v` sign-truncated to the field, in place (see [`Bits::fits_signed`]).
    #[inline(always)]
    pub(crate) const fn put_signed(self, v: i64) -> u64 {
        self.put(v as u64)
    }

    /// Whether the field holds `v` whole.
    pub(crate) const fn fits(self, v: u64) -> bool {
        v <= self.mask() >> self.shift
    }

    /// Whether the field holds `v` whole, sign-extended.
    pub(crate) const fn fits_signed(self, v: i64) -> bool {
        // `v >> (width - 1)` is all zeros or all ones: `v` sign-extends
        // from the field's top bit (any `v` for a 64-bit field).
        let top = v >> (self.width - 1);
        top == 0 || top == -1
    }

    /// Whether no two of `fields` share a bit.
    pub(crate) const fn disjoint(fields: &[Bits]) -> bool {
        let mut seen = 0u64;
        let mut rest = fields;
        while let [f, tail @ ..] = rest {
            if seen & f.mask() != 0 {
                return false;
            }
            seen |= f.mask();
            rest = tail;
        }
        true
    }
}

/// Preemption off while it lives: `preempt_disable()` to
/// `preempt_enable()`, for a few instructions, in any context.
pub(crate) struct NoPreempt;

impl NoPreempt {
    pub(crate) fn new() -> Self {
        // SAFETY: Only raises the preemption count, which `drop` lowers.
        unsafe { bindings::preempt_disable() };
        NoPreempt
    }
}

impl Drop for NoPreempt {
    fn drop(&mut self) {
        // SAFETY: Paired with the `preempt_disable()` of `new`.
        unsafe { bindings::preempt_enable() };
    }
}
