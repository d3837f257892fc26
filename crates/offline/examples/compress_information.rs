//! The self-information the compressor scores each word with (`−ln p(word | history)` under
//! the Kneser-Ney model of the text so far; the lowest go first), with each word's salience
//! (number, date, entity: always kept).
//!
//! ```text
//! cargo run --release -p mnemos-offline --example compress_information -- [TEXT…]
//! ```
//!
//! Without arguments it scores one English and one Chinese sample.

// A measurement program: a failed unwrap stops the run, which is what it should do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use mnemos_offline::compress::{classify_units, self_information};
use mnemos_text::Analyzer;

const EN: &str = "So yesterday I went over to the big hospital with my friend Caroline, and \
    the doctor told us that the surgery is going to cost about 3,500 dollars on 12 May 2024, \
    which is really quite a lot of money for us.";
const ZH: &str = "昨天我和王小明一起去了北京市的协和医院，医生说手术大概要花三千五百块钱，\
    时间定在2024年5月12日，这对我们来说真的是一笔很大的开销。";

fn main() {
    let given: Vec<String> = std::env::args().skip(1).collect();
    let texts: Vec<&str> = if given.is_empty() {
        vec![EN, ZH]
    } else {
        given.iter().map(String::as_str).collect()
    };
    let analyzer = Analyzer::shared();
    for text in texts {
        let units = classify_units(analyzer, text);
        let information = self_information(&units);
        for (u, bits) in units.iter().zip(&information) {
            let word = text.get(u.unit.start..u.unit.end).unwrap_or("");
            println!("{bits:>8.2} {:?} {word}", u.salience);
        }
    }
}
