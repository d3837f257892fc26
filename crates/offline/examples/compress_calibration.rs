//! Calibration of the similarity thresholds of `recoverable`: each sample's compression with
//! its cosine to the original and whether it counts as recoverable, then the cosine of two
//! pairs of unrelated texts — under the hash embedder and, when its files are cached, MiniLM.
//!
//! ```text
//! CANDLE_NUM_THREADS=1 cargo run --release -p mnemos-offline --example compress_calibration
//! ```

// A measurement program: a failed unwrap stops the run, which is what it should do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use anyhow::Result;
use mnemos_core::Embedder;
use mnemos_embed::{HashEmbedder, MiniLmEmbedder};
use mnemos_offline::compress::{compress, cosine, recoverable};
use mnemos_offline::Ctx;
use mnemos_text::Analyzer;

const TEXTS: [&str; 6] = [
    "So yesterday I went over to the big hospital with my friend Caroline, and the doctor told \
     us that the surgery is going to cost about 3,500 dollars on 12 May 2024, which is really \
     quite a lot of money for us.",
    "昨天我和王小明一起去了北京市的协和医院，医生说手术大概要花三千五百块钱，\
     时间定在2024年5月12日，这对我们来说真的是一笔很大的开销。",
    "I've been learning to play the guitar for about two years now, mostly folk songs, and \
     last month I finally performed at a small open mic night in my neighborhood.",
    "My sister just moved to Seattle for a new job at a software company, and I miss her a lot \
     because we used to have dinner together every Sunday evening.",
    "我最近在学做饭，每天晚上都会试一道新菜，上周末还给爸妈做了一桌红烧肉和糖醋排骨。",
    "我妹妹下个月要去上海读研究生了，她学的是计算机专业，我们全家都很为她骄傲。",
];

fn main() -> Result<()> {
    let hash = HashEmbedder::default();
    let minilm = mnemos_embed::resolve_model_dir(None)
        .ok()
        .and_then(|dir| MiniLmEmbedder::load(&dir).ok());
    let mut embedders: Vec<&dyn Embedder> = vec![&hash];
    match &minilm {
        Some(m) => embedders.push(m),
        None => println!("MiniLM not cached: hash embedder only"),
    }
    for embedder in embedders {
        let ctx = Ctx {
            analyzer: Analyzer::shared(),
            embedder,
        };
        for text in TEXTS {
            let short = compress(&ctx, text)?;
            println!(
                "{} cos={:.3} ok={} | {short}",
                embedder.id(),
                cosine(&ctx, text, &short)?,
                recoverable(&ctx, text, &short)?
            );
        }
        println!(
            "{} unrelated cos={:.3} / {:.3}",
            embedder.id(),
            cosine(&ctx, TEXTS[2], TEXTS[3])?,
            cosine(&ctx, TEXTS[4], TEXTS[5])?
        );
    }
    Ok(())
}
