// SPDX-License-Identifier: GPL-2.0

//! A small SFrame encoder for hand-made (and deliberately broken) sections.

/// One FRE: start offset, info byte, data words (written with the word size
/// the info byte names).
#[derive(Clone, Debug)]
pub struct FreSpec {
    pub start: u32,
    pub info: u8,
    pub words: Vec<i64>,
}

/// FRE info byte: CFA base (true = SP), number of words, word size code.
pub fn fre_info(sp: bool, count: u8, size_code: u8) -> u8 {
    (size_code << 5) | (count << 1) | u8::from(sp)
}

/// An FRE with 1-byte words.
pub fn fre(start: u32, sp: bool, words: &[i64]) -> FreSpec {
    FreSpec {
        start,
        info: fre_info(sp, words.len() as u8, 0),
        words: words.to_vec(),
    }
}

/// Flex control word.
pub fn ctl(reg: u32, deref: bool, reg_p: bool) -> i64 {
    i64::from((reg << 3) | (u32::from(deref) << 1) | u32::from(reg_p))
}

#[derive(Clone, Debug)]
pub struct FdeSpec {
    /// Absolute function start address.
    pub start: u64,
    pub size: u32,
    /// FDE info byte (FRE type in the low bits, PC type at bit 4).
    pub info: u8,
    /// V3 info2 byte (FDE type).
    pub info2: u8,
    pub rep: u8,
    pub fres: Vec<FreSpec>,
    /// Stored FRE count (defaults to fres.len()).
    pub num_fres: Option<u32>,
    /// Stored FRE offset (defaults to where the builder puts them).
    pub fre_off: Option<u32>,
}

pub fn fde(start: u64, size: u32, fres: Vec<FreSpec>) -> FdeSpec {
    FdeSpec {
        start,
        size,
        info: 0,
        info2: 0,
        rep: 0,
        fres,
        num_fres: None,
        fre_off: None,
    }
}

#[derive(Clone, Debug)]
pub struct Builder {
    pub version: u8,
    pub flags: u8,
    pub abi: u8,
    pub fixed_fp: i8,
    pub fixed_ra: i8,
    pub aux: Vec<u8>,
    pub addr: u64,
    pub fdes: Vec<FdeSpec>,
    /// Header overrides.
    pub num_fdes: Option<u32>,
    pub num_fres: Option<u32>,
    pub fre_len: Option<u32>,
    pub fde_off: Option<u32>,
    pub fre_off: Option<u32>,
}

impl Builder {
    /// An AMD64 section of the given version, flagged sorted (and PC-relative
    /// for V2/V3), loaded at 0x10000.
    pub fn amd64(version: u8) -> Builder {
        Builder {
            version,
            flags: if version == 1 { 1 } else { 5 },
            abi: 3,
            fixed_fp: 0,
            fixed_ra: -8,
            aux: vec![],
            addr: 0x10000,
            fdes: vec![],
            num_fdes: None,
            num_fres: None,
            fre_len: None,
            fde_off: None,
            fre_off: None,
        }
    }

    /// An AArch64 little-endian section (no fixed offsets).
    pub fn aarch64(version: u8) -> Builder {
        Builder {
            abi: 2,
            fixed_ra: 0,
            ..Builder::amd64(version)
        }
    }

    pub fn fde(mut self, f: FdeSpec) -> Builder {
        self.fdes.push(f);
        self
    }

    fn fde_size(&self) -> usize {
        match self.version {
            1 => 17,
            2 => 20,
            _ => 16,
        }
    }

    /// Encode the section.
    pub fn build(&self) -> Vec<u8> {
        let v3 = self.version == 3;
        let hdr = 28 + self.aux.len();
        let fde_size = self.fde_size();
        let mut fres_area: Vec<u8> = Vec::new();
        let mut fre_offs = Vec::new();
        let mut total = 0u32;
        for f in &self.fdes {
            fre_offs.push(fres_area.len() as u32);
            let n = f.num_fres.unwrap_or(f.fres.len() as u32);
            total += f.fres.len() as u32;
            if v3 {
                fres_area.extend_from_slice(&(n as u16).to_le_bytes());
                fres_area.push(f.info);
                fres_area.push(f.info2);
                fres_area.push(f.rep);
            }
            let asz = match f.info & 0xf {
                0 => 1,
                1 => 2,
                _ => 4,
            };
            for r in &f.fres {
                fres_area.extend_from_slice(&r.start.to_le_bytes()[..asz]);
                fres_area.push(r.info);
                let wsz = match (r.info >> 5) & 3 {
                    0 => 1,
                    1 => 2,
                    _ => 4,
                };
                for w in &r.words {
                    fres_area.extend_from_slice(&w.to_le_bytes()[..wsz]);
                }
            }
        }
        let fde_bytes = fde_size * self.fdes.len();
        let fde_off = self.fde_off.unwrap_or(0);
        let fre_off = self.fre_off.unwrap_or(fde_off + fde_bytes as u32);
        let mut out = Vec::new();
        out.extend_from_slice(&0xdee2u16.to_le_bytes());
        out.push(self.version);
        out.push(self.flags);
        out.push(self.abi);
        out.push(self.fixed_fp as u8);
        out.push(self.fixed_ra as u8);
        out.push(self.aux.len() as u8);
        out.extend_from_slice(
            &self
                .num_fdes
                .unwrap_or(self.fdes.len() as u32)
                .to_le_bytes(),
        );
        out.extend_from_slice(&self.num_fres.unwrap_or(total).to_le_bytes());
        out.extend_from_slice(&self.fre_len.unwrap_or(fres_area.len() as u32).to_le_bytes());
        out.extend_from_slice(&fde_off.to_le_bytes());
        out.extend_from_slice(&fre_off.to_le_bytes());
        out.extend_from_slice(&self.aux);
        out.resize(hdr + fde_off as usize, 0);
        for (i, f) in self.fdes.iter().enumerate() {
            let field = hdr + fde_off as usize + i * fde_size;
            let base = if self.flags & 4 != 0 {
                self.addr.wrapping_add(field as u64)
            } else {
                self.addr
            };
            let rel = f.start.wrapping_sub(base) as i64;
            let mut e = Vec::new();
            if v3 {
                e.extend_from_slice(&rel.to_le_bytes());
            } else {
                e.extend_from_slice(&(rel as i32).to_le_bytes());
            }
            e.extend_from_slice(&f.size.to_le_bytes());
            e.extend_from_slice(&f.fre_off.unwrap_or(fre_offs[i]).to_le_bytes());
            if !v3 {
                e.extend_from_slice(&f.num_fres.unwrap_or(f.fres.len() as u32).to_le_bytes());
                e.push(f.info);
                if self.version == 2 {
                    e.push(f.rep);
                    e.extend_from_slice(&[0, 0]);
                }
            }
            assert_eq!(e.len(), fde_size);
            out.extend_from_slice(&e);
        }
        out.resize(hdr + fre_off as usize, 0);
        out.extend_from_slice(&fres_area);
        out
    }
}
