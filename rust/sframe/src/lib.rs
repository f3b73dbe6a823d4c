// SPDX-License-Identifier: GPL-2.0

//! SFrame stack trace information decoder.
//!
//! Decodes `.sframe` sections (the SFrame format of GNU binutils, see
//! `include/sframe.h` and the "SFrame format" specification) of versions 1,
//! 2 (with and without `SFRAME_F_FDE_FUNC_START_PCREL`) and 3 (including
//! flexible FDEs, outermost-frame and signal-frame marks), for AMD64 and
//! little-endian AArch64.
//!
//! The crate is written for the Linux kernel as much as for host tools:
//!
//! - `#![no_std]`, no allocation, no dependency beyond `core`, no `unsafe`;
//! - section bytes come through a [`Reader`], so the same code reads a host
//!   slice, a kernel buffer or user memory with fault-safe copies;
//! - untrusted bytes are never used to index, slice or compute without a
//!   check: every failed check is an [`Error`] variant, never a panic;
//! - [`Section::find`] takes a bounded number of steps for any input (a
//!   binary search over the FDEs, then at most [`MAX_FRES_PER_FDE`] FREs) and
//!   checks what it reads, whether or not [`Section::validate`] was called.
//!
//! ```
//! # fn f(bytes: &[u8], addr: u64, pc: u64) -> Result<(), sframe::Error> {
//! let mut sec = sframe::Section::new(bytes, bytes.len() as u32, addr)?;
//! sec.validate()?;
//! match sec.find(pc) {
//!     Ok(row) => { /* apply row.cfa, row.ra, row.fp */ }
//!     Err(sframe::Error::NotCovered) => { /* try another unwinder */ }
//!     Err(e) => { /* malformed section: e.name() */ }
//! }
//! # Ok(()) }
//! ```

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::cast_possible_truncation,
        clippy::cast_possible_wrap,
        clippy::cast_sign_loss,
        clippy::as_conversions,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

mod error;
mod reader;
mod section;
mod types;

pub use error::Error;
pub use reader::{Blocks, Reader};
pub use section::{FreMark, Section, Stopped, Visitor};
pub use types::{
    Abi, Base, CfaRule, Fde, FdeType, FreType, Header, PackedFde, PackedRow, PcType, RawFre,
    RegRule, Row, Version, F_FDE_FUNC_START_PCREL, F_FDE_SORTED, F_FRAME_POINTER, HEADER_SIZE,
    MAGIC, MAX_DATA_WORDS, MAX_FRES_PER_FDE,
};
