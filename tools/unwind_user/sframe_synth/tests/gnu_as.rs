// SPDX-License-Identifier: GPL-2.0

//! Against a real producer: the decoder's corpus has x86_64 binaries that
//! GNU as 2.47.50 built with SFrame V3 from the same CFI directives that
//! made their `.eh_frame`. Where both GNU as and the synthesizer describe an
//! address, the rows must be the same.
//!
//! GNU ld's PC-mask FDEs for PLT stubs are left out of the comparison: ld
//! writes them from its own templates, not from the CFI (and 2.47.50 says
//! CFA = SP + 16 for the 8-byte `.plt.got` stubs, which a `call` enters with
//! CFA = SP + 8, as their `.eh_frame` FDE says).

use object::{Object, ObjectSection};
use sframe::{Error, PcType, Section};
use sframe_synth::{elf, synthesize};

const CORPUS: &str = "../../../rust/sframe/tests/corpus/bin";
const BINARIES: [&str; 7] = [
    "many.v3",
    "asm.v3",
    "signal.v3",
    "realign.v3",
    "sections.v3",
    "plt.v3",
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

        let (mut same, mut only_ours, mut only_theirs, mut plt) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..theirs.num_fdes() {
            let fde = theirs.fde(i).unwrap();
            if fde.pc_type == PcType::Mask {
                plt += u64::from(fde.func_size);
                continue;
            }
            for pc in fde.func_start..fde.func_end() {
                let t = theirs.find(pc);
                match (ours.find(pc), t) {
                    (Ok(o), Ok(t)) => {
                        // FRE boundaries may differ; the rule may not.
                        assert_eq!(
                            (o.cfa, o.ra, o.fp, o.outermost, o.signal_frame),
                            (t.cfa, t.ra, t.fp, t.outermost, t.signal_frame),
                            "{name}: {pc:#x}"
                        );
                        assert_eq!((o.func_start, o.func_size), (t.func_start, t.func_size));
                        same += 1;
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
            "{name}: {same} addresses with the same row, {only_theirs} only GNU as covers, {only_ours} only ours, {plt} in ld's PLT FDEs"
        );
        assert!(same > 0, "{name}");
    }
}
