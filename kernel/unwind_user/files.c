// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of the per-file SFrame tables (file_table.rs) and of their
 * provider (provider.rs), for what the Rust abstractions do not offer: a
 * sysctl, an initcall, an anonymous file with its own file_operations, a
 * wait queue, and the static inline functions of the C headers that
 * bindgen cannot call.
 */
#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/highmem.h>
#include <linux/init.h>
#include <linux/pagemap.h>
#include <linux/percpu.h>
#include <linux/stat.h>
#include <linux/poll.h>
#include <linux/shmem_fs.h>
#include <linux/sysctl.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>
#include <linux/workqueue.h>
#include <linux/unwind_user_sframe.h>

/*
 * kernel.unwind_user_file_bytes_max: most bytes of kernel memory the
 * per-file tables may hold, machine-wide. 64 MiB covers a few hundred
 * distinct libraries (Debian's libc takes about 0.6 MiB).
 */
unsigned long unwind_user_file_bytes_max = 64UL << 20;

/*
 * kernel.unwind_user_file_bytes_user_max: the part of it that tables built
 * from files root does not own may take. Any user can have the kernel
 * build one (a program of their own, mapped and profiled); the rest of the
 * budget stays for the system's own programs and libraries.
 */
unsigned long unwind_user_file_bytes_user_max = 16UL << 20;

/*
 * kernel.unwind_user_file_bytes_per_user: the part of that part that the
 * tables one user has built may take (unwind_user_payer()), so that no
 * user takes it all from the others.
 */
unsigned long unwind_user_file_bytes_per_user = 4UL << 20;

/*
 * kernel.unwind_user_file_tables_max: most files with a table,
 * machine-wide, tables that say a file has nothing included; a quarter of
 * them may be of files root does not own, and a sixteenth those one user
 * had built. At the limit, a table that describes nothing goes to make
 * room.
 */
unsigned long unwind_user_file_tables_max = 1UL << 16;
static unsigned long unwind_user_file_tables_min = 64;
static unsigned long unwind_user_file_tables_limit = 1UL << 20;

static const struct ctl_table unwind_user_sysctls[] = {
	{
		.procname	= "unwind_user_file_bytes_max",
		.data		= &unwind_user_file_bytes_max,
		.maxlen		= sizeof(unwind_user_file_bytes_max),
		.mode		= 0644,
		.proc_handler	= proc_doulongvec_minmax,
	},
	{
		.procname	= "unwind_user_file_bytes_user_max",
		.data		= &unwind_user_file_bytes_user_max,
		.maxlen		= sizeof(unwind_user_file_bytes_user_max),
		.mode		= 0644,
		.proc_handler	= proc_doulongvec_minmax,
	},
	{
		.procname	= "unwind_user_file_bytes_per_user",
		.data		= &unwind_user_file_bytes_per_user,
		.maxlen		= sizeof(unwind_user_file_bytes_per_user),
		.mode		= 0644,
		.proc_handler	= proc_doulongvec_minmax,
	},
	{
		.procname	= "unwind_user_file_tables_max",
		.data		= &unwind_user_file_tables_max,
		.maxlen		= sizeof(unwind_user_file_tables_max),
		.mode		= 0644,
		.proc_handler	= proc_doulongvec_minmax,
		.extra1		= &unwind_user_file_tables_min,
		.extra2		= &unwind_user_file_tables_limit,
	},
};

static int __init unwind_user_files_initcall(void)
{
	unwind_user_files_init();
	register_sysctl_init("kernel", unwind_user_sysctls);
	return 0;
}
core_initcall(unwind_user_files_initcall);

bool unwind_user_perfmon_capable(void)
{
	return perfmon_capable();
}

bool unwind_user_inode_open_for_write(const struct inode *inode)
{
	return inode_is_open_for_write(inode);
}

/*
 * The inode whose bytes reading or mapping @file gives, which keys and
 * stamps its table: not an overlayfs (or FUSE passthrough) inode, whose
 * layer below changes under it at copy-up. A mapping's file is the
 * layer's own (a backing file, whose f_path is the layer's), an opened
 * overlayfs file reads its layer's (d_real_inode() of its dentry).
 */
const struct inode *unwind_user_file_inode(const struct file *file)
{
	return d_real_inode(file->f_path.dentry);
}

/*
 * The mtime and ctime of @inode, as stat() reads them: on a file system
 * with multigrain timestamps (ext4, XFS, Btrfs, tmpfs), the ctime is
 * flagged as queried, so that the next change of the file records a
 * distinct one, even in the same tick of the coarse clock. (Not the
 * change cookie, which XFS also moves at an atime update: a read of the
 * file would make its table stale.) No sleep, no lock. C: the inode's
 * timestamps have no Rust abstraction.
 */
void unwind_user_inode_times(struct inode *inode, struct timespec64 *mtime,
			     struct timespec64 *ctime)
{
	struct kstat stat;

	if (is_mgtime(inode)) {
		fill_mg_cmtime(&stat, STATX_CTIME | STATX_MTIME, inode);
		*mtime = stat.mtime;
		*ctime = stat.ctime;
	} else {
		*mtime = inode_get_mtime(inode);
		*ctime = inode_get_ctime(inode);
	}
}

/*
 * Marks @inode as one whose file has a table, or may have: evict() tells
 * the unwinder only of such inodes (AS_SFRAME_TABLE). Under the inode's
 * lock: not every writer of the mapping's flags updates them atomically,
 * and a lost mark would leave a table keyed by a freed inode. In 7.2 those
 * writers are inode_init_always() and mapping_set_folio_order_range()'s
 * callers, which all run while the inode is being set up (I_NEW), before
 * a file of it can be opened, but for ext4, which sets the folio orders
 * of a live inode when its journal flag changes, with the inode locked
 * exclusively. Once per inode. Called with no lock held.
 */
void unwind_user_inode_mark_table(struct inode *inode)
{
	if (test_bit(AS_SFRAME_TABLE, &inode->i_data.flags))
		return;
	inode_lock_shared(inode);
	set_bit(AS_SFRAME_TABLE, &inode->i_data.flags);
	inode_unlock_shared(inode);
}

/*
 * cond_resched(), for the validation of a large section: a macro that
 * bindgen cannot call.
 */
void unwind_user_cond_resched(void)
{
	cond_resched();
}

/*
 * Was @inode marked (unwind_user_inode_mark_table())? Only a marked
 * inode's file can have a table: mmap looks an unmarked one up in no
 * table, with no lock. A bit test: mmap runs it for every executable
 * mapping of a file, with the mmap write lock held.
 */
bool unwind_user_inode_marked(const struct inode *inode)
{
	return test_bit(AS_SFRAME_TABLE, &inode->i_data.flags);
}

/*
 * Is @inode's file one any user may have made, whose table takes from the
 * users' part of the budget? Not owned by root, or on a file system whose
 * owner a user is (a FUSE server says what the owner is; a user
 * namespace's mount). C: the superblock's flags and user namespace have no
 * Rust abstraction.
 */
bool unwind_user_inode_users(const struct inode *inode)
{
	const struct super_block *sb = inode->i_sb;

	return !uid_eq(inode->i_uid, GLOBAL_ROOT_UID) ||
	       (sb->s_iflags & SB_I_UNTRUSTED_MOUNTER) ||
	       sb->s_user_ns != &init_user_ns;
}

/*
 * The user who pays for the tables of users' files the current task has
 * the kernel build: its real uid, or, in a user namespace, the uid (in the
 * initial one) of the user who created the outermost namespace below the
 * initial one, as ucounts charges a namespace's users to its creator: a
 * container's many ids are one user. C: struct user_namespace has no
 * Rust abstraction.
 */
u32 unwind_user_payer(void)
{
	const struct cred *cred = current_cred();
	const struct user_namespace *ns = cred->user_ns;
	kuid_t uid = cred->uid;

	for (; ns != &init_user_ns; ns = ns->parent)
		uid = ns->owner;
	return __kuid_val(uid);
}

/*
 * The first page of @file, mapped for reading, if the page cache holds it
 * up to date, with its folio in @folio; else NULL: what mmap of a file
 * with no table yet may know of its program headers, with the mmap write
 * lock held, where the file is not to be read. No I/O, no sleep, no copy.
 * Release it with unwind_user_file_page_done(). C: the page cache has no
 * Rust abstraction.
 */
const void *unwind_user_file_first_page(struct file *file, struct folio **folio)
{
	struct folio *f = filemap_get_folio(file->f_mapping, 0);

	if (IS_ERR(f))
		return NULL;
	if (!folio_test_uptodate(f)) {
		folio_put(f);
		return NULL;
	}
	*folio = f;
	return kmap_local_folio(f, 0);
}

void unwind_user_file_page_done(struct folio *folio, const void *addr)
{
	kunmap_local(addr);
	folio_put(folio);
}

/*
 * mmap's judgement whether a file may have a PT_GNU_SFRAME segment of its
 * own (may_have_own_section() in file_table.rs), remembered for the files
 * mapped last on each CPU: every process that starts maps the same
 * libraries, whose program headers say the same until the file changes.
 * A slot per hash of the inode, keyed by the inode and the stamp of its
 * contents, its size and ctime, flagged as queried when judged
 * (multigrain timestamps), so that a change made after gets a new ctime
 * even in the same tick; the inode is compared, never dereferenced, and
 * its file system and number tell a freed inode's successor at the same
 * address. Per CPU, with preemption off: mmap holds only its own mm's
 * lock, and a shared table would need a lock of its own. C: Rust has no
 * per-CPU variables.
 */
#define UNWIND_USER_JUDGED_BITS	4

struct unwind_user_judged_cpu {
	struct unwind_user_judged slot[1 << UNWIND_USER_JUDGED_BITS];
};

static DEFINE_PER_CPU(struct unwind_user_judged_cpu, unwind_user_judged);

static unsigned int unwind_user_judged_hash(const struct inode *inode)
{
	return hash_ptr(inode, UNWIND_USER_JUDGED_BITS);
}

static bool unwind_user_judged_eq(const struct unwind_user_judged *a,
				  const struct unwind_user_judged *b)
{
	return a->inode == b->inode && a->sb == b->sb && a->ino == b->ino &&
	       a->size == b->size && a->ctime_sec == b->ctime_sec &&
	       a->ctime_nsec == b->ctime_nsec;
}

static void unwind_user_judged_of(const struct inode *inode,
				  struct unwind_user_judged *j)
{
	j->inode = inode;
	j->sb = inode->i_sb;
	j->ino = inode->i_ino;
	j->size = i_size_read(inode);
	j->ctime_sec = inode_get_ctime_sec(inode);
	j->ctime_nsec = inode_get_ctime_nsec(inode);
}

/*
 * Was @inode's file, as it is now, judged on this CPU? If so, whether it
 * may have a PT_GNU_SFRAME, in @may. No lock, no sleep.
 */
bool unwind_user_file_judged(const struct inode *inode, bool *may)
{
	struct unwind_user_judged_cpu *judged;
	struct unwind_user_judged now, *slot;
	bool hit;

	unwind_user_judged_of(inode, &now);
	judged = get_cpu_ptr(&unwind_user_judged);
	slot = &judged->slot[unwind_user_judged_hash(inode)];
	hit = unwind_user_judged_eq(&now, slot);
	*may = slot->may;
	put_cpu_ptr(&unwind_user_judged);
	return hit;
}

/*
 * Before its program headers are read: the stamp of @inode's contents, in
 * @j, with its ctime flagged as queried; false if the file is open for
 * writing, whose contents may change with no new ctime yet (a write sets
 * the times before it copies the bytes).
 */
bool unwind_user_file_judge_begin(struct inode *inode,
				  struct unwind_user_judged *j)
{
	struct timespec64 mtime, ctime;

	if (inode_is_open_for_write(inode))
		return false;
	unwind_user_inode_times(inode, &mtime, &ctime);
	unwind_user_judged_of(inode, j);
	return true;
}

/*
 * After: remembers on this CPU the judgement @j->may of the file of @j,
 * unless it was opened for writing meanwhile (a writer that opened it
 * after unwind_user_file_judge_begin() changes its ctime).
 */
void unwind_user_file_judge_end(const struct unwind_user_judged *j)
{
	struct unwind_user_judged_cpu *judged;

	if (inode_is_open_for_write(j->inode))
		return;
	judged = get_cpu_ptr(&unwind_user_judged);
	judged->slot[unwind_user_judged_hash(j->inode)] = *j;
	put_cpu_ptr(&unwind_user_judged);
}

/*
 * Copies @len bytes of @file at @pos to @buf from its page cache, reading
 * into it what it lacks, as uprobes reads a mapped file's instructions
 * (copy_insn()): not kernel_read(), which would check the sampled task's
 * permission to read the file with its LSM and raise fanotify access and
 * permission events in whichever task's walk builds the table (a
 * profiled fanotify listener would wait for its own answer). The bytes
 * are a mapped file's, which the process that mapped it reads anyway;
 * fanotify's pre-content events were raised when it was mapped. 0,
 * -EBADF for a file not open for reading, -ENOEXEC for a range past the
 * end of the file or a file with no page cache to read (DAX): no ELF
 * file the unwinder can use; -EINTR for a fatal signal, or the file
 * system's error. May sleep. C: the page cache has no Rust abstraction.
 */
int unwind_user_file_read(struct file *file, void *buf, size_t len, loff_t pos)
{
	struct address_space *mapping = file->f_mapping;
	loff_t size = i_size_read(file_inode(file));

	if (!(file->f_mode & FMODE_READ))
		return -EBADF;
	if (pos < 0 || pos > size || len > size - pos ||
	    (!mapping->a_ops->read_folio && !shmem_mapping(mapping)))
		return -ENOEXEC;
	while (len) {
		pgoff_t index = pos >> PAGE_SHIFT;
		struct folio *folio;
		size_t off, n;

		if (fatal_signal_pending(current))
			return -EINTR;
		if (mapping->a_ops->read_folio)
			folio = read_mapping_folio(mapping, index, file);
		else
			folio = shmem_read_folio(mapping, index);
		if (IS_ERR(folio))
			return PTR_ERR(folio);
		off = offset_in_folio(folio, pos);
		n = min(len, folio_size(folio) - off);
		memcpy_from_folio(buf, folio, off, n);
		folio_put(folio);
		buf += n;
		pos += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

/*
 * A table an agent attached holds its file (file_table.rs): while tables
 * do, they are looked at every UNWIND_USER_SWEEP_SECS, and those whose
 * file changed or lost its last name (a library a package manager
 * replaced) let it go, so that its blocks, its mount and its budget are
 * not held until the agent happens to attach or detach again.
 */
#define UNWIND_USER_SWEEP_SECS	10

static void unwind_user_files_sweep_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(unwind_user_files_sweep_work,
			    unwind_user_files_sweep_fn);

static void unwind_user_files_sweep_fn(struct work_struct *work)
{
	if (unwind_user_files_sweep())
		unwind_user_files_sweep_later();
}

/* Schedules the sweep, unless it is already. Any context. */
void unwind_user_files_sweep_later(void)
{
	schedule_delayed_work(&unwind_user_files_sweep_work,
			      UNWIND_USER_SWEEP_SECS * HZ);
}

/*
 * The provider's descriptor (UNWIND_USER_FILE_PROVIDE): an anonymous file
 * whose reads take the queue of wanted files (provider.rs), and which
 * polls readable when the queue has something. The registration ends
 * when the file is released.
 */
static DECLARE_WAIT_QUEUE_HEAD(unwind_user_provider_wq);

void unwind_user_provider_wake(void)
{
	wake_up_interruptible(&unwind_user_provider_wq);
}

static ssize_t unwind_user_provider_read(struct file *file, char __user *buf,
					 size_t count, loff_t *ppos)
{
	ssize_t ret;

	for (;;) {
		ret = unwind_user_provider_take(buf, count);
		if (ret != -EAGAIN || (file->f_flags & O_NONBLOCK))
			return ret;
		if (wait_event_interruptible(unwind_user_provider_wq,
					     unwind_user_provider_ready()))
			return -ERESTARTSYS;
	}
}

static __poll_t unwind_user_provider_poll(struct file *file, poll_table *wait)
{
	poll_wait(file, &unwind_user_provider_wq, wait);
	return unwind_user_provider_ready() ? EPOLLIN | EPOLLRDNORM : 0;
}

static void unwind_user_provider_expire_fn(struct work_struct *work)
{
	unwind_user_provider_expire();
}

static DECLARE_DELAYED_WORK(unwind_user_provider_expire_work,
			    unwind_user_provider_expire_fn);

/*
 * The queue outlives the provider by a grace period, for a restarted
 * provider to take over; then the delayed work lets its files go, unless
 * a provider registered meanwhile.
 */
static int unwind_user_provider_release(struct inode *inode, struct file *file)
{
	unsigned long ms = unwind_user_provider_gone();

	mod_delayed_work(system_wq, &unwind_user_provider_expire_work,
			 msecs_to_jiffies(ms));
	return 0;
}

static const struct file_operations unwind_user_provider_fops = {
	.owner		= THIS_MODULE,
	.read		= unwind_user_provider_read,
	.poll		= unwind_user_provider_poll,
	.release	= unwind_user_provider_release,
	.llseek		= noop_llseek,
};

int unwind_user_provider_open(void)
{
	return anon_inode_getfd("[unwind_user_provider]",
				&unwind_user_provider_fops, NULL,
				O_RDONLY | O_CLOEXEC);
}

/*
 * @file, which a walk met mapped, opened again read-only with the current
 * task's credentials (the provider's, which reads it), and only if the
 * provider may read it, as fanotify opens the files it hands its
 * listener. The mapping's own file may be open for writing, or be an
 * execute-only program its owner may not read. By the path of the bytes
 * the mapping maps: an overlayfs mapping's layer below (f_path of a
 * backing file), not the overlay's path, which reads the upper layer
 * once the file was copied up: the answer is for the inode the mapping
 * keys its table with (unwind_user_file_inode()).
 */
struct file *unwind_user_file_reopen(struct file *file)
{
	const struct path *path = &file->f_path;
	int err;

	err = inode_permission(mnt_idmap(path->mnt), d_inode(path->dentry),
			       MAY_OPEN | MAY_READ);
	if (err)
		return ERR_PTR(err);
	return dentry_open(path, O_RDONLY | O_LARGEFILE, current_cred());
}
