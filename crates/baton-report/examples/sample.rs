//! Write a synthetic project's records, to try `baton report` on:
//! `cargo run -p baton-report --example sample -- DIR [SESSIONS FEATURES PASSING]`.
#![allow(missing_docs)]

use baton_report::sample::{Sample, write};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: sample DIR [SESSIONS FEATURES PASSING]");
        std::process::exit(2);
    };
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let d = Sample::default();
    let s = Sample {
        sessions: num(1, d.sessions as usize) as u32,
        features: num(2, d.features),
        passing: num(3, d.passing),
        ..d
    };
    std::fs::create_dir_all(dir)?;
    write(std::path::Path::new(dir), &s)
}
