// SPDX-License-Identifier: GPL-2.0

//! Against a real producer: the decoder's corpus has x86_64 binaries that
//! GNU as 2.47.50 built with SFrame V3 from the same CFI directives that
//! made their `.eh_frame`. Where both GNU as and the synthesizer describe an
//! address, the rows must be the same.
//!
//! GNU ld's SFrame for the PLT (PLT0 by increment, the `.plt` and
//! `.plt.sec` entries by PC mask) is compared too: the synthesizer writes
//! the `.plt` entries as a PC-mask function from the CFA expression of
//! their `.eh_frame` FDE, and must give the same rows at every byte. The
//! one place where it must differ is `.plt.got`: ld 2.47.50 says CFA =
//! SP + 16 there (its lazy-entry template), but a `call` enters those
//! stubs with CFA = SP + 8, as their `.eh_frame` FDE says and as the
//! synthesizer follows.

use object::{Object, ObjectSection};
use sframe::{Base, Error, PcType, Section};
use sframe_synth::{elf, synthesize};

const CORPUS: &str = "../../../rust/sframe/tests/corpus/bin";
const BINARIES: [&str; 8] = [
    "many.v3",
    "asm.v3",
    "signal.v3",
    "realign.v3",
    "sections.v3",
    "plt.v3",
    "plt-ibt.v3",
    "libplt.v3.so",
];

#[test]
fn rows_match_gnu_as() {
    for name in BINARIES {
        let path = format!("{CORPUS}/{name}");
        let Ok(data) = std::fs::read(&path) else {
            println!("note: {path} does not exist, skipped");
            continue;
        };
        let file = object::File::parse(&data[..]).unwrap();
        let gas = file.section_by_name(".sframe").unwrap();
        let gas_bytes = gas.data().unwrap();
        let mut theirs = Section::new(gas_bytes, gas_bytes.len() as u32, gas.address()).unwrap();
        theirs.validate().unwrap();

        let obj = elf::read_elf(&data).unwrap();
        assert!(obj.has_sframe);
        let syn = synthesize(&obj).unwrap();
        let mut ours = Section::new(&syn.section[..], syn.section.len() as u32, 0).unwrap();
        ours.validate().unwrap();

        let plt_got = file
            .section_by_name(".plt.got")
            .map(|s| s.address()..s.address() + s.size());
        let (mut same, mut only_ours, mut only_theirs) = (0u64, 0u64, 0u64);
        let (mut mask, mut plt_got_differs) = (0u64, 0u64);
        for i in 0..theirs.num_fdes() {
            let fde = theirs.fde(i).unwrap();
            let is_mask = fde.pc_type == PcType::Mask;
            for pc in fde.func_start..fde.func_end() {
                let t = theirs.find(pc);
                match (ours.find(pc), t) {
                    (Ok(o), Ok(t)) if plt_got.as_ref().is_some_and(|r| r.contains(&pc)) => {
                        assert!(is_mask, "{name}: {pc:#x}");
                        assert_eq!(
                            (t.cfa.base, t.cfa.offset),
                            (Base::Sp, 16),
                            "{name}: {pc:#x}"
                        );
                        assert_eq!((o.cfa.base, o.cfa.offset), (Base::Sp, 8), "{name}: {pc:#x}");
                        assert_eq!((o.ra, o.fp), (t.ra, t.fp), "{name}: {pc:#x}");
                        plt_got_differs += 1;
                    }
                    (Ok(o), Ok(t)) => {
                        // FRE boundaries may differ; the rule may not.
                        assert_eq!(
                            (o.cfa, o.ra, o.fp, o.outermost, o.signal_frame),
                            (t.cfa, t.ra, t.fp, t.outermost, t.signal_frame),
                            "{name}: {pc:#x}"
                        );
                        assert_eq!((o.func_start, o.func_size), (t.func_start, t.func_size));
                        same += 1;
                        mask += u64::from(is_mask);
                    }
                    (Err(Error::NotCovered), Ok(_)) => only_theirs += 1,
                    (Ok(_), Err(Error::NotCovered)) => only_ours += 1,
                    (Err(Error::NotCovered), Err(Error::NotCovered)) => {}
                    (o, t) => panic!("{name}: {pc:#x}: {o:?} {t:?}"),
                }
            }
        }
        // Nothing the synthesizer encodes lies outside what GNU as covers.
        for f in &syn.functions {
            for pc in f.start..f.start + u64::from(f.size) {
                if theirs.find_fde(pc).is_err() {
                    only_ours += 1;
                }
            }
        }
        println!(
            "{name}: {same} addresses with the same row ({mask} in ld's PC-mask FDEs), {only_theirs} only GNU as or ld covers, {only_ours} only ours, {plt_got_differs} in .plt.got where ld says SP+16"
        );
        assert!(same > 0, "{name}");
        // Every PLT entry the objects have is compared.
        if file.section_by_name(".plt").is_some() {
            assert!(mask > 0, "{name}");
        }
    }
}
