// SPDX-License-Identifier: GPL-2.0

//! What the unwinder's kernel memory costs, and who pays for it: the
//! flags it allocates with (charged to the memory cgroup of the task that
//! registers, forks or walks), and the machine's budget of file tables
//! (`kernel.unwind_user_file_bytes_max`, its part for files root does not
//! own, and each user's share of that part), which a [`Charge`] holds
//! bytes of.

use kernel::{
    alloc::{
        flags::{__GFP_NOWARN, __GFP_RETRY_MAYFAIL, GFP_KERNEL_ACCOUNT},
        Flags, KVec,
    },
    bindings,
    error::code::ENOSPC,
    global_lock,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

/// How the unwinder allocates: charged to the memory cgroup of the task
/// that registers (or forks), and failing with `ENOMEM` rather than
/// invoking the OOM killer when that cgroup is at its limit. Quietly: a
/// process can make these fail at will, and `ENOMEM` is its answer, not a
/// warning with a stack trace in the kernel log.
pub(crate) fn gfp() -> Flags {
    GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN
}

/// Bytes of kernel memory the file tables hold: those the machine's
/// tables hold, and those detached or replaced that an address space
/// still uses. Every byte is held by a [`Charge`].
static TABLE_BYTES: Atomic<u64> = Atomic::new(0);
/// The part of [`TABLE_BYTES`] that tables of files root does not own
/// hold.
static USER_BYTES: Atomic<u64> = Atomic::new(0);

/// The budget of file tables, `kernel.unwind_user_file_bytes_max`.
fn budget() -> u64 {
    // SAFETY: A plain `unsigned long` the sysctl writes; a torn read is
    // impossible for an aligned word.
    unsafe { core::ptr::read_volatile(&raw const bindings::unwind_user_file_bytes_max) as u64 }
}

/// The part of it for files root does not own,
/// `kernel.unwind_user_file_bytes_user_max`.
fn user_budget() -> u64 {
    // SAFETY: As in `budget()`.
    unsafe { core::ptr::read_volatile(&raw const bindings::unwind_user_file_bytes_user_max) as u64 }
}

/// Each user's share of [`user_budget()`],
/// `kernel.unwind_user_file_bytes_per_user`.
fn per_user_budget() -> u64 {
    // SAFETY: As in `budget()`.
    unsafe { core::ptr::read_volatile(&raw const bindings::unwind_user_file_bytes_per_user) as u64 }
}

/// The account of one user for the tables of files any user may have made
/// that their tasks had the kernel build: their bytes, within
/// `kernel.unwind_user_file_bytes_per_user`, and their number, within
/// `file_table.rs`'s limit, so that no user takes the users' part of the
/// budget from the others. A user is one of the initial user namespace:
/// the users of a user namespace are its creator's, as `ucounts` counts
/// them, so that the many ids of a container are one account. Root has
/// none: root's tables take from the users' part only.
pub(crate) struct Account {
    uid: u32,
    bytes: Atomic<u64>,
    /// Tables the account holds, counted by `file_table.rs` under its
    /// lock.
    pub(crate) tables: Atomic<u64>,
}

/// Most users with an account: one each, never freed (a few dozen bytes
/// a user who ever had a table built: 3 MiB at most); a user past them
/// has their tables refused. Above the 4,336 ids systemd gives its
/// dynamic users (a container's ids are its creator's account).
const MAX_ACCOUNTS: usize = 1 << 16;

global_lock! {
    // SAFETY: `init()` initialises it, at core_initcall time, before any
    // user process exists to have a table built.
    unsafe(uninit) static ACCOUNTS: Mutex<KVec<Arc<Account>>> = KVec::new();
}

/// Initialises the lock of the accounts.
///
/// # Safety
///
/// Called once, before any other use of the lock.
pub(crate) unsafe fn init() {
    // SAFETY: The caller's contract.
    unsafe { ACCOUNTS.init() };
}

/// The account of the user the current task runs for, who pays for the
/// tables of users' files it has built; `None` for root. `ENOSPC` past
/// [`MAX_ACCOUNTS`].
pub(crate) fn payer() -> Result<Option<Arc<Account>>> {
    // SAFETY: Reads the current task's credentials; no preconditions.
    let uid = unsafe { bindings::unwind_user_payer() };
    if uid == 0 {
        return Ok(None);
    }
    let mut accounts = ACCOUNTS.lock();
    let i = match accounts.binary_search_by_key(&uid, |a| a.uid) {
        Ok(i) => return Ok(accounts.get(i).cloned()),
        Err(i) => i,
    };
    if accounts.len() >= MAX_ACCOUNTS {
        return Err(ENOSPC);
    }
    let account = Arc::new(
        Account {
            uid,
            bytes: Atomic::new(0),
            tables: Atomic::new(0),
        },
        GFP_KERNEL,
    )?;
    accounts
        .insert_within_capacity(i, account.clone())
        .or_else(|_| {
            accounts.reserve(1, GFP_KERNEL)?;
            accounts
                .insert_within_capacity(i, account.clone())
                .map_err(|_| ENOMEM)
        })?;
    Ok(Some(account))
}

/// `cur` bytes and `n` more, if that is at most `max`.
fn within(cur: u64, n: usize, max: u64) -> Option<u64> {
    cur.checked_add(n as u64).filter(|&t| t <= max)
}

/// Counts `n` more bytes in `counter`; `ENOSPC` past `max`.
fn charge_to(counter: &Atomic<u64>, n: usize, max: u64) -> Result {
    let mut cur = counter.load(Relaxed);
    loop {
        let new = within(cur, n, max).ok_or(ENOSPC)?;
        match counter.cmpxchg(cur, new, Relaxed) {
            Ok(_) => return Ok(()),
            Err(now) => cur = now,
        }
    }
}

/// Would `n` more bytes of a file's table (of a file root does not own if
/// `user`, paid for by `payer`) fit the budget now?
pub(crate) fn room_for(n: usize, user: bool, payer: Option<&Account>) -> bool {
    let fits = |c: &Atomic<u64>, max| within(c.load(Relaxed), n, max).is_some();
    fits(&TABLE_BYTES, budget())
        && (!user || fits(&USER_BYTES, user_budget()))
        && (!user || payer.is_none_or(|a| fits(&a.bytes, per_user_budget())))
}

/// Bytes the file tables hold now.
pub(crate) fn bytes() -> u64 {
    TABLE_BYTES.load(Relaxed)
}

/// Bytes of a file's table counted against the machine's budget, given
/// back when dropped (in any context: the last user of a table may drop
/// it in an RCU callback).
///
/// # Invariants
///
/// `n` bytes are counted in [`TABLE_BYTES`], and if `user` in
/// [`USER_BYTES`] and in `payer`'s account too, if any, for this value
/// alone.
pub(crate) struct Charge {
    n: usize,
    user: bool,
    payer: Option<Arc<Account>>,
}

impl Charge {
    /// Counts `n` bytes of a file's table, of a file root does not own if
    /// `user`, paid for by `payer`; `ENOSPC` past the budget, past the
    /// part of it for such files, or past the payer's share of that.
    pub(crate) fn new(n: usize, user: bool, payer: Option<Arc<Account>>) -> Result<Charge> {
        let payer = if user { payer } else { None };
        if let Some(a) = &payer {
            charge_to(&a.bytes, n, per_user_budget())?;
        }
        let undo_payer = |payer: &Option<Arc<Account>>| {
            if let Some(a) = payer {
                a.bytes.fetch_sub(n as u64, Relaxed);
            }
        };
        if user {
            if let Err(e) = charge_to(&USER_BYTES, n, user_budget()) {
                undo_payer(&payer);
                return Err(e);
            }
        }
        if let Err(e) = charge_to(&TABLE_BYTES, n, budget()) {
            if user {
                USER_BYTES.fetch_sub(n as u64, Relaxed);
            }
            undo_payer(&payer);
            return Err(e);
        }
        // INVARIANT: The counters were charged `n` bytes above, the users'
        // and the payer's only if `user`.
        Ok(Charge { n, user, payer })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        // By the type's invariant, these bytes were counted for `self`.
        TABLE_BYTES.fetch_sub(self.n as u64, Relaxed);
        if self.user {
            USER_BYTES.fetch_sub(self.n as u64, Relaxed);
        }
        if let Some(a) = &self.payer {
            a.bytes.fetch_sub(self.n as u64, Relaxed);
        }
    }
}
