/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SFrame user-space unwinder: the C side's view of kernel/unwind_user/,
 * which is written in Rust.
 */
#ifndef _LINUX_UNWIND_USER_SFRAME_H
#define _LINUX_UNWIND_USER_SFRAME_H

#include <linux/errno.h>
#include <linux/time64.h>
#include <linux/types.h>
#include <linux/unwind_user_types.h>

struct inode;
struct super_block;
struct mm_struct;
struct vm_area_struct;

#ifdef CONFIG_USERSPACE_UNWINDER_SFRAME

bool unwind_user_sframe_walks_nofault(struct mm_struct *mm);
bool unwind_user_sframe_start(struct mm_struct *mm,
			      struct unwind_user_state *state);
int unwind_user_sframe_next(struct unwind_user_state *state,
			    struct unwind_user_frame *frame);
void unwind_user_sframe_done(const struct unwind_user_state *state);
bool unwind_user_sframe_ra_ok(struct unwind_user_state *state,
			      unsigned long ra);
void unwind_user_sframe_mm_dup(struct mm_struct *mm, struct mm_struct *oldmm);
void unwind_user_sframe_mm_free(struct mm_struct *mm);
void unwind_user_sframe_mm_unmap(struct mm_struct *mm, unsigned long start,
				 unsigned long end, bool exec);
void unwind_user_sframe_mm_mmap(struct vm_area_struct *vma);
void unwind_user_sframe_mm_vdso(struct mm_struct *mm);
void unwind_user_sframe_inode_evict(const struct inode *inode);
long unwind_user_sframe_prctl(unsigned long op, unsigned long arg3,
			      unsigned long arg4, unsigned long arg5);
int unwind_user_assist_signal(unsigned int *timeout_ms);

/*
 * Whether the frame-pointer rule's check of the return address that is now
 * the IP (unwind_user_sframe_ra_ok()) found, in the rule cache, that frame
 * pointers unwind it: then the SFrame step has nothing to look up, and the
 * frame is the frame-pointer rule's. Inline, as it is the whole step of
 * every such frame.
 */
static inline bool unwind_user_sframe_fp_known(struct unwind_user_state *state)
{
	if (state->sframe.hint != UNWIND_USER_SFRAME_FP)
		return false;
	state->sframe.hint = UNWIND_USER_SFRAME_PROBE;
	state->sframe.fallbacks++;
	return true;
}

/* kernel/unwind_user/files.c: C glue of the per-file tables. */
struct file;
extern unsigned long unwind_user_file_bytes_max;
extern unsigned long unwind_user_file_bytes_user_max;
extern unsigned long unwind_user_file_bytes_per_user;
extern unsigned long unwind_user_file_tables_max;
void unwind_user_files_init(void);
bool unwind_user_perfmon_capable(void);
bool unwind_user_inode_open_for_write(const struct inode *inode);
const struct inode *unwind_user_file_inode(const struct file *file);
struct timespec64;
void unwind_user_inode_times(struct inode *inode, struct timespec64 *mtime,
			     struct timespec64 *ctime);
void unwind_user_inode_mark_table(struct inode *inode);
bool unwind_user_inode_marked(const struct inode *inode);
void unwind_user_cond_resched(void);
bool unwind_user_inode_users(const struct inode *inode);
u32 unwind_user_payer(void);
struct folio;
const void *unwind_user_file_first_page(struct file *file,
					struct folio **folio);
void unwind_user_file_page_done(struct folio *folio, const void *addr);
int unwind_user_file_read(struct file *file, void *buf, size_t len, loff_t pos);
/* What mmap judged of a file's program headers (files.c). */
struct unwind_user_judged {
	const struct inode *inode;
	const struct super_block *sb;
	unsigned long ino;
	loff_t size;
	time64_t ctime_sec;
	long ctime_nsec;
	bool may;	/* may have a PT_GNU_SFRAME of its own */
};

bool unwind_user_file_judged(const struct inode *inode, bool *may);
bool unwind_user_file_judge_begin(struct inode *inode,
				  struct unwind_user_judged *j);
void unwind_user_file_judge_end(const struct unwind_user_judged *j);
struct file *unwind_user_file_reopen(struct file *file);
int unwind_user_provider_open(void);
void unwind_user_provider_wake(void);
ssize_t unwind_user_provider_take(char __user *buf, size_t len);
bool unwind_user_provider_ready(void);
unsigned long unwind_user_provider_gone(void);
void unwind_user_provider_expire(void);
bool unwind_user_files_sweep(void);
void unwind_user_files_sweep_later(void);

/* kernel/unwind_user/vdso.c: C glue of the vDSO's section. */
void unwind_user_vdso_init(void);
const void *unwind_user_vdso_image(unsigned long *size);
unsigned long unwind_user_vdso_base(struct mm_struct *mm);

#else /* !CONFIG_USERSPACE_UNWINDER_SFRAME */

static inline bool unwind_user_sframe_walks_nofault(struct mm_struct *mm)
{
	return false;
}

static inline bool unwind_user_sframe_start(struct mm_struct *mm,
					    struct unwind_user_state *state)
{
	return false;
}

static inline bool unwind_user_sframe_fp_known(struct unwind_user_state *state)
{
	return false;
}

static inline int unwind_user_sframe_next(struct unwind_user_state *state,
					  struct unwind_user_frame *frame)
{
	return -ENOENT;
}

static inline void
unwind_user_sframe_done(const struct unwind_user_state *state) {}

static inline bool unwind_user_sframe_ra_ok(struct unwind_user_state *state,
					    unsigned long ra)
{
	return true;
}

static inline void unwind_user_sframe_mm_dup(struct mm_struct *mm,
					     struct mm_struct *oldmm) {}

static inline void unwind_user_sframe_mm_free(struct mm_struct *mm) {}

static inline void unwind_user_sframe_mm_unmap(struct mm_struct *mm,
					       unsigned long start,
					       unsigned long end, bool exec) {}

static inline void unwind_user_sframe_mm_mmap(struct vm_area_struct *vma) {}

static inline void unwind_user_sframe_mm_vdso(struct mm_struct *mm) {}

static inline void unwind_user_sframe_inode_evict(const struct inode *inode) {}

static inline long unwind_user_sframe_prctl(unsigned long op,
					    unsigned long arg3,
					    unsigned long arg4,
					    unsigned long arg5)
{
	return -EINVAL;
}

static inline int unwind_user_assist_signal(unsigned int *timeout_ms)
{
	return 0;
}

#endif /* CONFIG_USERSPACE_UNWINDER_SFRAME */

#endif /* _LINUX_UNWIND_USER_SFRAME_H */
