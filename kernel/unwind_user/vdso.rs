// SPDX-License-Identifier: GPL-2.0

//! The vDSO's SFrame section.
//!
//! The series builds the 64-bit vDSO with `--gsframe`. Its code keeps frame
//! pointers, but the frame-pointer rule is wrong at a function's first and
//! last instructions, before `push %rbp` and after `pop %rbp`, where a
//! sample lands as often as anywhere (`__vdso_clock_gettime`'s first one
//! most of all: a timer interrupt is taken there): it then reports a
//! caller that never called, from a `%rbp` the caller uses for data.
//!
//! The section is validated once, at boot, from the kernel's copy of the
//! image, and kept with its table ([`SectionTable`]) in kernel memory.
//! Every address space that has a registry (every process, from exec) gets
//! it as a registration sharing those rows, at the vDSO's address: from
//! `map_vdso()` at exec and the vDSO's `mremap()`, or when its registry is
//! created.

use crate::{
    elf::{self, Segment},
    memory::gfp,
    mmap_lock::LockedMm,
    registry::RegistryWriter,
    section::{Section, SectionTable},
    usual::TextCode,
    validate,
};
use kernel::{
    alloc::KVVec,
    bindings,
    error::code::{EEXIST, ENOENT, ENOEXEC, ENOSPC},
    prelude::*,
    sync::{
        atomic::{Acquire, Atomic, Release},
        Arc,
    },
};

/// The vDSO's section, validated, and where it is in the image.
struct Vdso {
    /// The image's size: what `map_vdso()` maps.
    image_size: usize,
    text: Segment,
    sframe_addr: u64,
    sframe_len: u32,
    fdes: Arc<SectionTable>,
}

/// Set once, at boot, and never freed: a `KBox` leaked by [`init`].
static VDSO: Atomic<*mut Vdso> = Atomic::new(core::ptr::null_mut());

/// The image of the 64-bit vDSO, in kernel memory, as built.
///
/// # Safety
///
/// Only at `core_initcall` time, for as long as that initcall runs: the
/// image is written later, once, when `init_vdso_image()`
/// (`subsys_initcall`) applies the alternatives to it.
unsafe fn image<'a>() -> &'a [u8] {
    let mut size = 0;
    // SAFETY: Writes `size` only; the image is static kernel data.
    let data = unsafe { bindings::unwind_user_vdso_image(&mut size) };
    // SAFETY: `vdso64_image.data` is `size` bytes of kernel data that lives
    // as long as the kernel. Nothing writes it while the borrow lasts: only
    // `init_vdso_image()` does, at `subsys_initcall` time, after the
    // `core_initcall` this is called from (the caller's contract); initcalls
    // run one at a time.
    unsafe { core::slice::from_raw_parts(data.cast::<u8>(), size) }
}

/// Validates the vDSO's section.
///
/// # Safety
///
/// As for [`image`]: at `core_initcall` time.
unsafe fn build() -> Result<Vdso> {
    // SAFETY: The caller's contract; `image` does not outlive this call
    // (`Vdso` keeps copies).
    let image = unsafe { image() };
    let read = |buf: &mut [u8], pos: u64| -> Result {
        let start = usize::try_from(pos).map_err(|_| ENOEXEC)?;
        let end = start.checked_add(buf.len()).ok_or(ENOEXEC)?;
        buf.copy_from_slice(image.get(start..end).ok_or(ENOEXEC)?);
        Ok(())
    };
    let layout = elf::layout(read)?;
    let sframe = layout.sframe.ok_or(ENOENT)?;
    let len = usize::try_from(sframe.size).map_err(|_| ENOEXEC)?;
    let mut bytes = KVVec::from_elem(0u8, len, gfp())?;
    read(&mut bytes, sframe.offset)?;
    // The vDSO is built with frame pointers, which the assembler does not
    // say: say it in the kernel's copy of the header, so that code with no
    // row (vgetrandom's ChaCha, assembly without CFI) is left to the
    // frame-pointer rule, as before, instead of ending the walk. Versions
    // 1 and 2 have the flag; 3 has none.
    if matches!(bytes.get(2), Some(1 | 2)) {
        if let Some(flags) = bytes.get_mut(3) {
            *flags |= sframe::F_FRAME_POINTER;
        }
    }
    let text = layout.text;
    let s = Section {
        text_start: usize::try_from(text.vaddr).map_err(|_| ENOEXEC)?,
        text_end: usize::try_from(text.vaddr + text.size).map_err(|_| ENOEXEC)?,
        sframe_start: 0,
        sframe_addr: usize::try_from(sframe.vaddr).map_err(|_| ENOEXEC)?,
        sframe_len: u32::try_from(len).map_err(|_| ENOEXEC)?,
        in_kernel: true,
    };
    // Its code as built, before alternatives are applied (subsys_initcall):
    // what they patch in is no signal trampoline, which the 64-bit vDSO
    // does not have.
    let code = &mut TextCode {
        len: text.size,
        read: |buf: &mut [u8], off: u64| read(buf, text.offset.checked_add(off).ok_or(ENOEXEC)?),
    };
    let fdes = validate::validate_in_kernel(&s, bytes, code)?
        .for_kernel_code()
        .shared()?;
    Ok(Vdso {
        image_size: image.len(),
        text,
        sframe_addr: sframe.vaddr,
        sframe_len: s.sframe_len,
        fdes,
    })
}

/// Validates the vDSO's section, once, at boot (`core_initcall`). Without
/// it (a vDSO built without `--gsframe`, an allocation failure), the vDSO
/// is left to the frame-pointer rule.
///
/// # Safety
///
/// Once, at `core_initcall` time (see [`image`]).
pub(crate) unsafe fn init() {
    // SAFETY: The caller's contract.
    match unsafe { build() }.and_then(|v| Ok(KBox::new(v, GFP_KERNEL)?)) {
        Ok(v) => VDSO.store(KBox::into_raw(v), Release),
        Err(e) => pr_info!("no SFrame section for the vDSO: {:?}\n", e),
    }
}

/// The vDSO section's table, once validated.
fn get() -> Option<&'static Vdso> {
    // SAFETY: Set once by `init()`, before any process exists, and never
    // freed.
    unsafe { VDSO.load(Acquire).as_ref() }
}

/// The registry of `mm`, created if needed: a new one with the vDSO's
/// section registered, as every registry has it.
pub(crate) fn registry_or_create<'a>(mm: &'a LockedMm<'_>) -> Result<RegistryWriter<'a>> {
    let (mut r, new) = RegistryWriter::of_or_new(mm)?;
    if new {
        register_in(mm, &mut r);
    }
    Ok(r)
}

/// Registers the vDSO's section in `mm`'s registry, if it has one and maps
/// the 64-bit vDSO: at `map_vdso()` (exec) and after the vDSO's `mremap()`.
pub(crate) fn register(mm: &LockedMm<'_>) {
    if let Some(mut r) = RegistryWriter::of(mm) {
        register_in(mm, &mut r);
    }
}

/// Registers the vDSO's section in `r`, `mm`'s registry, if `mm` maps the
/// 64-bit vDSO.
fn register_in(mm: &LockedMm<'_>, r: &mut RegistryWriter<'_>) {
    let Some(v) = get() else {
        return;
    };
    // SAFETY: `mm` is live and its mmap lock held (`LockedMm`), under which
    // the vDSO's address changes.
    let base = unsafe { bindings::unwind_user_vdso_base(mm.as_ptr()) } as usize;
    if base == 0 {
        return;
    }
    let Some(s) = v
        .text
        .placed(base, base.saturating_add(v.image_size), 0)
        .and_then(|text| Section::in_kernel_memory(&text, v.sframe_addr, v.sframe_len))
    else {
        return;
    };
    match r.add(s, v.fdes.clone()) {
        // Registered already, or the address space's limit: nothing to add.
        Err(e) if e != EEXIST && e != ENOSPC => {
            pr_debug!("vDSO section not registered: {:?}\n", e)
        }
        _ => {}
    }
}
