// SPDX-License-Identifier: GPL-2.0

//! Print every FDE and FRE of a raw `.sframe` section, with raw data words.
//!
//! Usage: cargo run --example dump -- SECTION_FILE SECTION_ADDR
//! (extract the section with `objcopy -O binary --only-section=.sframe`).

use sframe::Section;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: dump SECTION_FILE SECTION_ADDR");
        std::process::exit(2);
    }
    let bytes = std::fs::read(&args[1]).expect("read section file");
    let addr = u64::from_str_radix(args[2].trim_start_matches("0x"), 16).expect("hex address");
    let len = u32::try_from(bytes.len()).expect("section too large");
    let mut sec = match Section::new(bytes.as_slice(), len, addr) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!("{:?}", sec.header());
    println!("validate: {:?}", sec.validate());
    for i in 0..sec.num_fdes() {
        let fde = match sec.fde(i) {
            Ok(f) => f,
            Err(e) => {
                println!("fde {i}: {e}");
                continue;
            }
        };
        println!("{fde:?}");
        let r = sec.for_each_fre(&fde, |raw, row| {
            let words: Vec<String> = (0..raw.count())
                .map(|k| format!("{:#x}", raw.uword(k).unwrap_or(0)))
                .collect();
            println!(
                "  +{:#x} info={:#04x} words=[{}] {:?}",
                raw.start,
                raw.info,
                words.join(", "),
                row
            );
        });
        if let Err(e) = r {
            println!("  error: {e}");
        }
    }
}
