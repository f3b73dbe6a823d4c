// SPDX-License-Identifier: GPL-2.0

//! FRE marks (`Section::fre_marks`, `Section::find_row_from`): a lookup
//! that starts from the nearest mark finds the same row as one that walks
//! from the function's first FRE, for every PC of every function of the
//! real toolchains' corpus and of a 65535-row function; it reads at most
//! the FREs between two marks; a mark that does not match the bytes is an
//! error, never a wrong row or a panic.

mod common;
use common::*;
use sframe::{Abi, Error, Fde, FreMark, Reader, Section, Stopped, Version, Visitor};
use sframe_encode::{fre_info, FdeSpec, FreSpec, SectionSpec};
use std::cell::Cell;

/// The marks of `fde`, every `every` FREs.
fn marks<R: Reader>(sec: &mut Section<R>, fde: &Fde, every: u32) -> Vec<FreMark> {
    let mut v = Vec::new();
    sec.fre_marks(fde, every, |m| {
        v.push(m);
        Ok(())
    })
    .unwrap();
    v
}

/// The last mark at or below `ip_off`, as the kernel picks it.
fn nearest(marks: &[FreMark], ip_off: u32) -> Option<&FreMark> {
    let i = marks.partition_point(|m| m.start <= ip_off);
    i.checked_sub(1).and_then(|i| marks.get(i))
}

#[test]
fn corpus_lookups_from_marks_match() {
    let mut pcs = 0u64;
    let mut marked = 0u64;
    for f in corpus() {
        let s = sframe_of(&f);
        let mut sec = open(&s);
        for i in 0..sec.num_fdes() {
            let fde = sec.fde(i).unwrap();
            // Every 2 FREs: as many marks as the corpus can give.
            let ms = marks(&mut sec, &fde, 2);
            assert_eq!(
                ms.len() as u32,
                if fde.pc_type == sframe::PcType::Mask || fde.num_fres <= 2 {
                    0
                } else {
                    (fde.num_fres - 1) / 2
                },
                "{}: FDE {i}",
                f.name
            );
            marked += ms.len() as u64;
            for pc in fde.func_start..fde.func_end() {
                let ip_off = (pc - fde.func_start) as u32;
                let want = sec.find_row(&fde, pc);
                let got = sec.find_row_from(&fde, nearest(&ms, ip_off), pc);
                assert_eq!(want, got, "{}: pc {pc:#x}", f.name);
                pcs += 1;
            }
        }
    }
    assert!(pcs > 100_000 && marked > 500, "{pcs} PCs, {marked} marks");
}

/// Counts reader calls and bytes.
struct Counting<'a> {
    bytes: &'a [u8],
    calls: &'a Cell<u32>,
    read: &'a Cell<u32>,
}

impl Reader for Counting<'_> {
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        self.calls.set(self.calls.get() + 1);
        self.read.set(self.read.get() + buf.len() as u32);
        let mut s = self.bytes;
        s.read(offset, buf)
    }
}

/// One function of 65535 rows of three sizes (CFA only, CFA and FP, 2-byte
/// words), 4-byte start offsets: the largest a function may have.
fn huge() -> SectionSpec {
    let fres = (0..0xffff_u32)
        .map(|i| match i % 3 {
            0 => FreSpec::new(i * 2, true, &[8 + (i % 7) as i32 * 8]),
            1 => FreSpec::new(i * 2, false, &[16, -16]),
            _ => FreSpec {
                start: i * 2,
                info: fre_info(true, 2, 1),
                words: vec![0x100 + (i % 5) as i32 * 8, -24],
            },
        })
        .collect();
    let mut f = FdeSpec::new(0x100000, 0x20000, fres);
    f.info = 2; // 4-byte FRE start offsets
    SectionSpec {
        fdes: vec![f],
        ..SectionSpec::new(Version::V3, Abi::Amd64)
    }
}

#[test]
fn huge_function_lookups_are_bounded_from_marks() {
    let b = huge();
    let bytes = b.encode().unwrap();
    let mut sec = Section::new(&bytes[..], bytes.len() as u32, b.addr).unwrap();
    sec.validate().unwrap();
    let fde = sec.fde(0).unwrap();
    let ms = marks(&mut sec, &fde, 16);
    assert_eq!(ms.len(), 0xfffe / 16);
    let (calls, read) = (Cell::new(0), Cell::new(0));
    let mut counted = Section::new(
        Counting {
            bytes: &bytes,
            calls: &calls,
            read: &read,
        },
        bytes.len() as u32,
        b.addr,
    )
    .unwrap();
    let (mut worst_from, mut worst_plain) = (0, 0);
    for ip_off in (0..0x20000u32).step_by(37) {
        let pc = fde.func_start + u64::from(ip_off);
        read.set(0);
        let plain = counted.find_row(&fde, pc);
        worst_plain = worst_plain.max(read.get());
        read.set(0);
        let from = counted.find_row_from(&fde, nearest(&ms, ip_off), pc);
        worst_from = worst_from.max(read.get());
        assert_eq!(plain, from, "pc {pc:#x}");
    }
    println!(
        "most bytes read by a lookup: {worst_plain} from the first FRE, {worst_from} from a mark"
    );
    // 16 FREs of at most 4 + 1 + 2 * 2 bytes, in windows of 64 bytes.
    assert!(worst_from <= 4 * 64, "{worst_from} bytes from a mark");
    assert!(worst_plain > 100 * worst_from);
}

#[test]
fn mismatched_marks_are_errors() {
    let b = huge();
    let bytes = b.encode().unwrap();
    let mut sec = Section::new(&bytes[..], bytes.len() as u32, b.addr).unwrap();
    let fde = sec.fde(0).unwrap();
    let ms = marks(&mut sec, &fde, 16);
    let m = ms[100];
    let pc = fde.func_start + u64::from(m.start) + 1;
    assert!(sec.find_row_from(&fde, Some(&m), pc).is_ok());
    let bad = [
        // Another FRE's start.
        FreMark {
            start: m.start + 2,
            ..m
        },
        // Past the function's FREs.
        FreMark {
            index: fde.num_fres,
            ..m
        },
        // Past the PC looked up.
        FreMark {
            start: m.start + 4,
            ..ms[101]
        },
    ];
    for bad in bad {
        assert_eq!(
            sec.find_row_from(&fde, Some(&bad), pc),
            Err(Error::FreMarkMismatch),
            "{bad:?}"
        );
    }
    // An offset into the middle of an FRE, or past the FRE area: an error
    // (which one depends on the bytes there), never a row.
    for off in [1, 2, 3, u32::MAX - 3, u32::MAX] {
        let bad = FreMark {
            offset: m.offset.wrapping_add(off),
            ..m
        };
        let r = sec.find_row_from(&fde, Some(&bad), pc);
        assert!(
            r.as_ref().is_err_and(|e| e.is_malformed()),
            "{bad:?}: {r:?}"
        );
    }
    // The bytes changed under the marks: the row at the mark moved.
    let mut changed = bytes.clone();
    let fre_start = 28 + u32::from_le_bytes(bytes[24..28].try_into().unwrap()) as usize;
    let at = fre_start + (fde.fres_off + m.offset) as usize;
    changed[at..at + 4].copy_from_slice(&(m.start + 1).to_le_bytes());
    let mut sec2 = Section::new(&changed[..], changed.len() as u32, b.addr).unwrap();
    let fde2 = sec2.fde(0).unwrap();
    assert_eq!(
        sec2.find_row_from(&fde2, Some(&m), pc),
        Err(Error::FreMarkMismatch)
    );
}

/// What `validate_with` gives a visitor that keeps everything: FDEs with
/// their index, marks every `N` rows.
#[derive(Default)]
struct Collect<const N: u32> {
    fdes: Vec<(u32, Fde)>,
    marks: Vec<(u32, FreMark)>,
}

impl<const N: u32> Visitor for Collect<N> {
    type Error = ();
    const MARK_EVERY: u32 = N;

    fn fde(&mut self, i: u32, fde: &Fde) -> Result<(), ()> {
        self.fdes.push((i, *fde));
        Ok(())
    }

    fn mark(&mut self, i: u32, m: FreMark) -> Result<(), ()> {
        self.marks.push((i, m));
        Ok(())
    }
}

/// A visitor that stops the pass at its first FDE or its first mark.
struct StopAt {
    fde: bool,
}

impl Visitor for StopAt {
    type Error = &'static str;
    const MARK_EVERY: u32 = 16;

    fn fde(&mut self, _: u32, _: &Fde) -> Result<(), &'static str> {
        if self.fde {
            return Err("fde");
        }
        Ok(())
    }

    fn mark(&mut self, _: u32, _: FreMark) -> Result<(), &'static str> {
        Err("mark")
    }
}

/// Compares what `validate_with` gave `Collect<N>` with what `fde(i)` and
/// `fre_marks` give.
fn one_pass_is_two<const N: u32>(name: &str, sec: &mut Section<&[u8]>) {
    let mut want_fdes = Vec::new();
    let mut want_marks = Vec::new();
    for i in 0..sec.num_fdes() {
        let fde = sec.fde(i).unwrap();
        want_marks.extend(marks(sec, &fde, N).into_iter().map(|m| (i, m)));
        want_fdes.push((i, fde));
    }
    let mut got = Collect::<N>::default();
    sec.validate_with(&mut got).unwrap();
    assert_eq!(want_fdes, got.fdes, "{name}");
    assert_eq!(want_marks, got.marks, "{name}, every {N}");
}

/// `validate_with` gives, in the validation's one pass, every FDE that
/// `fde(i)` reads and every mark that `fre_marks` gives, in order, for the
/// valid sections of the corpus and a 65535-row function; an error of the
/// visitor stops the pass and is returned as the visitor's.
#[test]
fn validate_with_gives_what_two_passes_give() {
    let mut sections: Vec<(String, Vec<u8>, u64)> = corpus()
        .iter()
        .map(|f| {
            let s = sframe_of(f);
            (f.name.clone(), s.bytes.to_vec(), s.addr)
        })
        .collect();
    sections.push(("huge".into(), huge().encode().unwrap(), 0));
    let mut compared = 0;
    for (name, data, addr) in &sections {
        let mut sec = Section::new(&data[..], data.len() as u32, *addr).unwrap();
        // Sections validation refuses (unsorted FDEs) have nothing to keep.
        if sec.validate().is_err() {
            continue;
        }
        one_pass_is_two::<2>(name, &mut sec);
        one_pass_is_two::<16>(name, &mut sec);
        compared += 2;
    }
    assert!(
        compared > sections.len(),
        "{compared} of {}",
        sections.len()
    );
    let data = huge().encode().unwrap();
    let mut sec = Section::new(&data[..], data.len() as u32, 0).unwrap();
    let r = sec.validate_with(&mut StopAt { fde: false });
    assert_eq!(Err(Stopped::Visitor("mark")), r);
    let r = sec.validate_with(&mut StopAt { fde: true });
    assert_eq!(Err(Stopped::Visitor("fde")), r);
}
