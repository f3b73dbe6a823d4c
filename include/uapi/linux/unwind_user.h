/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * User ABI of the SFrame user-space unwinder, through
 * prctl(PR_UNWIND_USER, op, ...): registration of .sframe sections for code
 * no file's table describes (JIT code windows, sections kept apart from
 * their object); a query of the unwinder's counts; user-assisted
 * unwinding; and, for a privileged agent, the attach and detach of a
 * section as a file's table.
 *
 * See Documentation/userspace-api/unwind_user.rst.
 */
#ifndef _UAPI_LINUX_UNWIND_USER_H
#define _UAPI_LINUX_UNWIND_USER_H

#include <linux/types.h>

/* Operations of prctl(PR_UNWIND_USER) (<linux/prctl.h>), its second argument. */
/*
 * prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER,
 *       struct unwind_user_sframe *sec, size_t size, 0)
 */
#define UNWIND_USER_SFRAME_REGISTER	1
/* prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER, text_start, 0, 0) */
#define UNWIND_USER_SFRAME_UNREGISTER	2
/*
 * prctl(PR_UNWIND_USER, UNWIND_USER_QUERY,
 *       struct unwind_user_info *info, size_t size, 0)
 */
#define UNWIND_USER_QUERY		3
/*
 * prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_ENABLE,
 *       struct unwind_user_assist *assist, size_t size, 0)
 */
#define UNWIND_USER_ASSIST_ENABLE	4
/*
 * prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_SUBMIT,
 *       struct unwind_user_assist_frames *frames, size_t size, 0)
 */
#define UNWIND_USER_ASSIST_SUBMIT	5
/*
 * prctl(PR_UNWIND_USER, UNWIND_USER_FILE_ATTACH,
 *       struct unwind_user_file *file, size_t size, 0)
 *
 * Needs CAP_PERFMON or CAP_SYS_ADMIN: the section is attached to the file,
 * for every process that maps it, now or later.
 */
#define UNWIND_USER_FILE_ATTACH		6
/* prctl(PR_UNWIND_USER, UNWIND_USER_FILE_DETACH, fd, 0, 0); same privilege */
#define UNWIND_USER_FILE_DETACH		7
/*
 * prctl(PR_UNWIND_USER, UNWIND_USER_FILE_PROVIDE, 0, 0, 0)
 *
 * Needs CAP_SYS_ADMIN (the provider is given read descriptors of files it
 * may have no other way to open, as fanotify's listeners are): makes the
 * caller the machine's provider of file tables, which the kernel asks for
 * the table of each file a walk meets with none, once a file.  Returns a
 * descriptor
 * (close-on-exec) whose reads give struct unwind_user_file_want records;
 * it polls readable when one is queued.  The provider answers each with
 * UNWIND_USER_FILE_ATTACH, with a section or UNWIND_USER_FILE_F_NONE.
 * Closing the descriptor ends the registration.  EBUSY while another
 * provider is registered.
 */
#define UNWIND_USER_FILE_PROVIDE	8

/**
 * struct unwind_user_sframe - one .sframe section and the text it describes
 * @text_start:   first byte of the code the section describes; the key of
 *                the registration
 * @text_size:    size of that code in bytes
 * @sframe_start: address of the .sframe section in this process
 * @sframe_size:  size of the section in bytes
 * @flags:        0, or UNWIND_USER_SFRAME_F_ADDR
 * @sframe_addr:  with UNWIND_USER_SFRAME_F_ADDR, the address the section's
 *                own addresses are relative to: where it would sit had it
 *                been loaded with the code it describes.  For a section
 *                kept outside its object (one synthesized from .eh_frame
 *                and mapped from a cache file), the object's load bias
 *                plus the link-time address the section was built for.
 *                Without the flag, @sframe_start.
 *
 * Size-versioned: pass sizeof() as prctl's fourth argument.  A later kernel
 * may append fields; bytes past the fields a kernel knows must be zero.
 */
struct unwind_user_sframe {
	__u64 text_start;
	__u64 text_size;
	__u64 sframe_start;
	__u64 sframe_size;
	__u64 flags;
	__u64 sframe_addr;		/* since VER1 */
};

/* Decode the section as if it were at @sframe_addr (VER1 struct needed). */
#define UNWIND_USER_SFRAME_F_ADDR	(1ULL << 0)

#define UNWIND_USER_SFRAME_SIZE_VER0	40
#define UNWIND_USER_SFRAME_SIZE_VER1	48

/**
 * struct unwind_user_file - an SFrame section for an ELF file
 * @fd:          the file (an x86-64 ELF executable or shared object with
 *               exactly one executable PT_LOAD segment), open for reading;
 *               it must not be open for writing anywhere (ETXTBSY)
 * @flags:       0, or UNWIND_USER_FILE_F_NO_HOLD
 * @sframe_ptr:  the section's bytes in the caller's memory
 * @sframe_size: their size
 * @sframe_addr: the link-time address the section's own addresses are
 *               relative to: 0 for sframe-synth's output, the section's
 *               sh_addr for a file's own .sframe
 *
 * The kernel copies and validates the section, keeps one table for the
 * file, shared by every address space that maps its text, and attaches it
 * to an address space the first time a walk that may sleep meets that
 * text.  Size-versioned, as struct unwind_user_sframe.
 *
 * The table holds the file, as an open descriptor would, so that a process
 * that maps it later finds the table, until it is detached, or until the
 * file changes or loses its last name.  With UNWIND_USER_FILE_F_NO_HOLD,
 * and for a file with no name left when it is attached (a later link()
 * does not change that), it does not: it goes when the inode is evicted,
 * once nothing maps or holds the file open and the inode cache lets it
 * go, which may be before another process maps it; the file's file system
 * can be unmounted meanwhile (a container's, whose files the agent opened
 * through /proc/PID/map_files).
 */
#define UNWIND_USER_FILE_F_NO_HOLD	(1U << 0)
/*
 * The provider's answer that the file has no section to give (no
 * .eh_frame, nothing encodable, built with frame pointers): the kernel
 * remembers it for this version of the file and does not ask again; the
 * frame-pointer rule takes its frames.  @sframe_ptr, @sframe_size and
 * @sframe_addr must be 0.
 */
#define UNWIND_USER_FILE_F_NONE		(1U << 1)

struct unwind_user_file {
	__s32 fd;
	__u32 flags;
	__u64 sframe_ptr;
	__u64 sframe_size;
	__u64 sframe_addr;
};

#define UNWIND_USER_FILE_SIZE_VER0	32

/**
 * struct unwind_user_file_want - a file the kernel wants the table of
 * @size:  sizeof(struct unwind_user_file_want): a later kernel may append
 *         fields; records are read whole, @size bytes apart
 * @fd:    the file, opened read-only (close-on-exec) with the reader's
 *         credentials and installed in the reader: files of other mount
 *         namespaces, deleted or replaced files and memfds alike; a
 *         negative errno if it could not be opened (-EACCES: the reader
 *         may not read it); -1 with UNWIND_USER_WANT_F_OVERFLOW
 * @flags: UNWIND_USER_WANT_F_*
 * @walks: how many walks met the file before it was read
 * @asked_ns: when the first of them asked for it (CLOCK_MONOTONIC, ns)
 *
 * A read of the provider's descriptor gives as many whole records as fit,
 * EINVAL for a buffer smaller than one, and EAGAIN (O_NONBLOCK) or waits
 * when none is queued.  A file is asked for once: a walk that meets its
 * code meanwhile ends there (counted in table_waits) rather than guess
 * its callers with frame pointers, until the answer comes, the provider
 * closes its descriptor, or 30 seconds have passed.
 */
struct unwind_user_file_want {
	__u32 size;
	__s32 fd;
	__u32 flags;
	__u32 walks;
	__u64 asked_ns;
};

/* Wants were dropped (the queue was full): look at every process's maps. */
#define UNWIND_USER_WANT_F_OVERFLOW	(1U << 0)
/* A file any user may have made (not root's, or on a user's mount). */
#define UNWIND_USER_WANT_F_USER		(1U << 1)

#define UNWIND_USER_FILE_WANT_SIZE_VER0	24

/**
 * struct unwind_user_info - state of this process's unwinder
 * @nr_sections:    sections registered now, but the vDSO's, which the
 *                  kernel registers itself
 * @unwinds:        SFrame lookups done for this address space
 * @sframe_frames:  frames unwound with SFrame, or where SFrame ends the walk
 *                  (an outermost row; code in a section's text that no row
 *                  describes)
 * @fp_fallbacks:   frames no section covered, left to the frame-pointer rule
 * @errors:         walks ended at a covered frame: its section malformed or
 *                  unreadable, its row inexpressible, the read budget spent
 * @dropped:        registrations removed because their section went bad
 * @nofault_frames: frames unwound with SFrame at NMI or IRQ time
 *                  (perf_callchain_user(), e.g. perf record -g without defer)
 * @nofault_faults: walks ended at NMI or IRQ time because a read of the
 *                  section would have faulted, or to ask for the tables of
 *                  the files the address space maps
 * @cached_frames:  frames of @sframe_frames whose rule the kernel had kept
 *                  from an earlier unwind (no read of the section)
 * @section_reads:  copies from SFrame sections made while unwinding
 * @section_bytes:  bytes those copies read
 * @file_tables:    files described by a table, built from their own
 *                  PT_GNU_SFRAME or attached by an agent
 *                  (UNWIND_USER_FILE_ATTACH), machine-wide
 * @file_bytes:     kernel memory those tables take, machine-wide, bounded by
 *                  the sysctl kernel.unwind_user_file_bytes_max
 * @table_waits:    walks ended at code of a file whose table the provider
 *                  was asked for and has not given yet
 *                  (UNWIND_USER_FILE_PROVIDE)
 * @files_wanted:   files the provider was asked for, machine-wide
 * @wants_dropped:  files not asked for because the provider's queue was
 *                  full, machine-wide
 * @registries:     address spaces that have a registry (a process gets one
 *                  when it is first unwound, registers a section or maps a
 *                  file that has a table), machine-wide
 *
 * The machine-wide counts are 0 unless the caller has CAP_PERFMON or
 * CAP_SYS_ADMIN: what other users run shows in them.
 *
 * The kernel writes min(size, sizeof(struct unwind_user_info)) bytes; size
 * must be at least UNWIND_USER_INFO_SIZE_VER0.
 */
struct unwind_user_info {
	__u64 nr_sections;
	__u64 unwinds;
	__u64 sframe_frames;
	__u64 fp_fallbacks;
	__u64 errors;
	__u64 dropped;
	__u64 nofault_frames;
	__u64 nofault_faults;
	__u64 cached_frames;		/* since VER2 */
	__u64 section_reads;		/* since VER2 */
	__u64 section_bytes;		/* since VER2 */
	__u64 file_tables;		/* since VER3 */
	__u64 file_bytes;		/* since VER3 */
	__u64 table_waits;		/* since VER4 */
	__u64 files_wanted;		/* since VER4 */
	__u64 wants_dropped;		/* since VER4 */
	__u64 registries;		/* since VER5 */
};

#define UNWIND_USER_INFO_SIZE_VER0	48
#define UNWIND_USER_INFO_SIZE_VER1	64
#define UNWIND_USER_INFO_SIZE_VER2	88
#define UNWIND_USER_INFO_SIZE_VER3	104
#define UNWIND_USER_INFO_SIZE_VER4	128
#define UNWIND_USER_INFO_SIZE_VER5	136

/**
 * struct unwind_user_assist - user-assisted unwinding of this process
 * @signo:       the signal the kernel sends, after each deferred unwind
 *               of one of the process's threads, to that thread, with
 *               the unwind's cookie in si_value.sival_ptr (si_code
 *               SI_QUEUE, si_pid 0); 0 turns user-assisted unwinding off.
 *               SIGUSR1, SIGUSR2 or a real-time signal.
 * @max_entries: most frames an answer may hold, 1 to
 *               UNWIND_USER_ASSIST_MAX_ENTRIES
 * @timeout_ms:  how long after the signal was sent an answer is taken,
 *               1 to UNWIND_USER_ASSIST_MAX_TIMEOUT_MS
 * @flags:       0
 *
 * Size-versioned like struct unwind_user_sframe.
 */
struct unwind_user_assist {
	__u32 signo;
	__u32 max_entries;
	__u32 timeout_ms;
	__u32 flags;
};

#define UNWIND_USER_ASSIST_SIZE_VER0		16
#define UNWIND_USER_ASSIST_MAX_ENTRIES		256
#define UNWIND_USER_ASSIST_MAX_TIMEOUT_MS	1000

/**
 * struct unwind_user_assist_frames - a thread's own frames for a cookie
 * @cookie:  the cookie the signal carried
 * @entries: address of @nr __u64 frames, innermost first: addresses the
 *           profiler can name (a perf map file, /tmp/perf-PID.map, or a
 *           jitdump names them; see the documentation), and the marks
 *           below, which say where they go in the kernel's walk
 * @nr:      0 to the @max_entries the process enabled
 * @flags:   0
 *
 * Size-versioned like struct unwind_user_sframe.
 */
struct unwind_user_assist_frames {
	__u64 cookie;
	__u64 entries;
	__u32 nr;
	__u32 flags;
};

#define UNWIND_USER_ASSIST_FRAMES_SIZE_VER0	24

/*
 * Marks in an answer's entries, for the profiler (values in the first
 * page, where no code is): an answer that begins with
 *
 *	UNWIND_USER_ASSIST_LOOP, start, end	(once a code range)
 *
 * says that [start, end) is the interpreter's loop, and its frames follow
 * in runs, innermost run first, each one
 *
 *	UNWIND_USER_ASSIST_RUN, frame, frame, ...	(innermost first)
 *
 * the interpreted frames that one activation of the loop on the machine
 * stack was running. The profiler puts each run in the place of its
 * loop's frame in the kernel's walk, so that native code that an
 * interpreted function called stays above it. An answer without them
 * goes above the whole walk.
 */
#define UNWIND_USER_ASSIST_LOOP		1
#define UNWIND_USER_ASSIST_RUN		2

#endif /* _UAPI_LINUX_UNWIND_USER_H */
