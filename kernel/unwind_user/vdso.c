// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of the vDSO's SFrame section (vdso.rs): the x86 vDSO image and
 * where an mm maps it are in arch headers and fields that the Rust side
 * has no abstraction for, and an initcall.
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

/* The 64-bit vDSO's image, as the kernel maps it: an ELF shared object. */
const void *unwind_user_vdso_image(unsigned long *size)
{
	*size = vdso64_image.size;
	return vdso64_image.data;
}

/*
 * Where @mm maps the 64-bit vDSO's image, 0 if it does not: a 32-bit
 * process maps another, and munmap() leaves context.vdso as it was, so the
 * mapping there must still be the vDSO's, whole. Called with @mm's mmap
 * lock held, which map_vdso() and the vDSO's mremap() hold to change it.
 */
unsigned long unwind_user_vdso_base(struct mm_struct *mm)
{
	unsigned long base = (unsigned long)mm->context.vdso;
	struct vm_area_struct *vma;

	if (mm->context.vdso_image != &vdso64_image)
		return 0;
	vma = vma_lookup(mm, base);
	if (!vma || vma->vm_start != base || vma->vm_file ||
	    vma->vm_end - vma->vm_start != vdso64_image.size ||
	    !vma->vm_ops || !vma->vm_ops->name ||
	    strcmp(vma->vm_ops->name(vma), "[vdso]"))
		return 0;
	return base;
}
