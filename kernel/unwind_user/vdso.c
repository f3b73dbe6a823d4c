// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of the vDSO's SFrame section (vdso.rs): the vDSO image and where
 * an mm maps it are in arch headers and fields that the Rust side has no
 * abstraction for, and an initcall.
 */
#include <linux/init.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/unwind_user_sframe.h>
#include <asm/vdso.h>

static int __init unwind_user_vdso_initcall(void)
{
	unwind_user_vdso_init();
	return 0;
}
core_initcall(unwind_user_vdso_initcall);

#ifdef CONFIG_X86
/* The 64-bit vDSO's image, as the kernel maps it: an ELF shared object. */
const void *unwind_user_vdso_image(unsigned long *size)
{
	*size = vdso64_image.size;
	return vdso64_image.data;
}

/* Does @mm map the 64-bit vDSO? A 32-bit process maps another. */
static bool unwind_user_vdso_native(struct mm_struct *mm)
{
	return mm->context.vdso_image == &vdso64_image;
}
#else
/* The AArch64 vDSO's image, page-aligned, as the kernel maps it. */
const void *unwind_user_vdso_image(unsigned long *size)
{
	*size = vdso_end - vdso_start;
	return vdso_start;
}

/*
 * An AArch32 process maps the compat vDSO there; a mapping of its that
 * passes the checks below gets the AArch64 vDSO's rows, which no walk
 * reads: an AArch32 task is never unwound with sections
 * (unwind_user_word_size() is 0 for it).
 */
static bool unwind_user_vdso_native(struct mm_struct *mm)
{
	return true;
}
#endif

/*
 * Where @mm maps the 64-bit vDSO's image, 0 if it does not: munmap()
 * leaves context.vdso as it was, so the mapping there must still be the
 * vDSO's, whole. Called with @mm's mmap lock held, which the vDSO's
 * mapping and its mremap() hold to change it.
 */
unsigned long unwind_user_vdso_base(struct mm_struct *mm)
{
	unsigned long base = (unsigned long)mm->context.vdso;
	unsigned long size;
	struct vm_area_struct *vma;

	if (!unwind_user_vdso_native(mm))
		return 0;
	unwind_user_vdso_image(&size);
	vma = vma_lookup(mm, base);
	if (!vma || vma->vm_start != base || vma->vm_file ||
	    vma->vm_end - vma->vm_start != size ||
	    !vma->vm_ops || !vma->vm_ops->name ||
	    strcmp(vma->vm_ops->name(vma), "[vdso]"))
		return 0;
	return base;
}
