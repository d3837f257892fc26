//! Prints the statements, correction and asked slots of each line read from standard input;
//! with `--time`, the mean microseconds per line over repeated runs instead.
//!
//! `cargo run --release -p mnemos-text --example statements -- --time < lines.txt`

use std::io::BufRead;
use std::time::Instant;

use mnemos_text::{analyze, asked};

fn main() {
    let lines: Vec<String> = std::io::stdin()
        .lock()
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if std::env::args().any(|a| a == "--time") {
        time(&lines);
        return;
    }
    for line in &lines {
        let analysis = analyze(line);
        println!("{line}");
        for s in &analysis.statements {
            println!(
                "  {:?} {:?} q={:?} v={:?} key={:?}{}",
                s.subject,
                s.slot,
                s.qualifier,
                s.value,
                s.value_key,
                if s.negated { " NEGATED" } else { "" }
            );
        }
        if let Some(c) = &analysis.correction {
            println!("  correction: {:?} -> {:?}", c.wrong, c.right);
        }
        for a in asked(line) {
            println!("  asks {:?} {:?} q={:?}", a.subject, a.slot, a.qualifier);
        }
    }
}

/// Mean microseconds per line for `analyze`, by language, after one warm-up pass.
fn time(lines: &[String]) {
    for line in lines {
        analyze(line);
    }
    let rounds = 200;
    for chinese in [false, true] {
        let subset: Vec<&String> = lines
            .iter()
            .filter(|l| mnemos_text::has_cjk(l) == chinese)
            .collect();
        if subset.is_empty() {
            continue;
        }
        let start = Instant::now();
        for _ in 0..rounds {
            for line in &subset {
                std::hint::black_box(analyze(line));
            }
        }
        let micros = start.elapsed().as_secs_f64() * 1e6 / (rounds * subset.len()) as f64;
        let label = if chinese { "Chinese" } else { "English" };
        println!("{label}: {micros:.1} µs per line ({} lines)", subset.len());
    }
}
