// SPDX-License-Identifier: GPL-2.0

//! An executable mapping of a file, as the file tables see a VMA: its
//! range, the file's offset there and the file's inode.

use kernel::{bindings, mm::virt::VmaRef};

/// An executable mapping of a file, as a VMA described it while the mmap
/// lock was held.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileMapping {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The offset in the file of `start`, in bytes.
    pub(crate) offset: u64,
    /// The file's inode: an identity to compare, only dereferenced by
    /// whoever holds a reference to it.
    pub(crate) inode: *const bindings::inode,
}

impl FileMapping {
    /// The mapping `vma` makes, if it maps a regular file and is
    /// executable (not a device: a private mapping of `/dev/zero` keeps its
    /// file, and a device's inode gets no table).
    pub(crate) fn of(vma: &VmaRef) -> Option<FileMapping> {
        if vma.flags() & kernel::mm::virt::flags::EXEC == 0 {
            return None;
        }
        let raw = vma.as_ptr();
        // SAFETY: `vma` is a live VMA whose mm's mmap lock is held for the
        // borrow (`VmaRef`'s invariant): its file and offset are stable.
        let (file, pgoff) = unsafe { ((*raw).vm_file, (*raw).vm_pgoff) };
        if file.is_null() {
            return None;
        }
        // SAFETY: A VMA holds a reference to its file for as long as it
        // maps it. On overlayfs, that file is the layer's whose bytes are
        // mapped, not the overlay's that /proc/PID/maps names: the table
        // of those bytes is the one to attach.
        let inode = unsafe { bindings::unwind_user_file_inode(file) };
        // SAFETY: As above: the inode lives as long as the file.
        let mode = u32::from(unsafe { (*inode).i_mode });
        if mode & bindings::S_IFMT != bindings::S_IFREG {
            return None;
        }
        Some(FileMapping {
            start: vma.start(),
            end: vma.end(),
            offset: (pgoff as u64).checked_mul(kernel::page::PAGE_SIZE as u64)?,
            inode,
        })
    }
}
