// SPDX-License-Identifier: GPL-2.0

//! The architectures sections are synthesized for: the SFrame ABI of each,
//! and the DWARF registers its CFI names.

use std::fmt;

use gimli::{AArch64, Register, Vendor, X86_64};
use sframe::Abi;

/// An architecture of the objects read (`e_machine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86_64 (`EM_X86_64`): SFrame's AMD64 ABI.
    X86_64,
    /// AArch64, little-endian (`EM_AARCH64`).
    Aarch64,
}

impl Arch {
    /// The architecture this program was built for, which is the one the
    /// kernel it runs on unwinds.
    pub const HOST: Option<Arch> = if cfg!(target_arch = "x86_64") {
        Some(Arch::X86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(Arch::Aarch64)
    } else {
        None
    };

    /// Its SFrame ABI.
    pub fn abi(self) -> Abi {
        match self {
            Arch::X86_64 => Abi::Amd64,
            Arch::Aarch64 => Abi::Aarch64LittleEndian,
        }
    }

    /// Where every row has the return address, if the ABI fixes it (the
    /// header's fixed RA offset): x86_64's `call` pushes it just below the
    /// CFA. AArch64's is in the link register until a function saves it,
    /// wherever it does.
    pub fn fixed_ra_offset(self) -> Option<i32> {
        match self {
            Arch::X86_64 => Some(-8),
            Arch::Aarch64 => None,
        }
    }

    /// The stack pointer.
    pub fn sp(self) -> Register {
        match self {
            Arch::X86_64 => X86_64::RSP,
            Arch::Aarch64 => AArch64::SP,
        }
    }

    /// The frame pointer (`%rbp`, `x29`).
    pub fn fp(self) -> Register {
        match self {
            Arch::X86_64 => X86_64::RBP,
            Arch::Aarch64 => AArch64::X29,
        }
    }

    /// The return address column: x86_64's is RIP's, AArch64's the link
    /// register, `x30`.
    pub fn ra(self) -> Register {
        match self {
            Arch::X86_64 => X86_64::RA,
            Arch::Aarch64 => AArch64::X30,
        }
    }

    /// The vendor extensions of its CFI (AArch64's
    /// `DW_CFA_AARCH64_negate_ra_state`).
    pub fn vendor(self) -> Vendor {
        match self {
            Arch::X86_64 => Vendor::Default,
            Arch::Aarch64 => Vendor::AArch64,
        }
    }

    /// Is the return address signed (pointer authentication) in `row`?
    /// AArch64's `paciasp` and `.cfi_negate_ra_state` toggle it.
    pub fn ra_signed(self, row: &gimli::UnwindTableRow<usize>) -> bool {
        match self {
            Arch::X86_64 => false,
            Arch::Aarch64 => {
                row.register(AArch64::RA_SIGN_STATE) == Some(gimli::RegisterRule::Constant(1))
            }
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        })
    }
}
