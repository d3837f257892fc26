use mnemos_core::Embedder;
fn main() {
    let dir = mnemos_embed::resolve_model_dir(None).unwrap();
    let e = mnemos_embed::MiniLmEmbedder::load(&dir).unwrap();
    let base: Vec<String> = include_str!("../benches/utterances.txt").lines().filter(|l| !l.trim().is_empty()).map(String::from).collect();
    let texts: Vec<String> = (0..16).flat_map(|i| base.iter().map(move |b| format!("{i} {b}"))).collect();
    let refs: Vec<&str> = texts.iter().map(|s| s.as_str()).collect();
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(64);
    let t = std::time::Instant::now();
    let mut k = 0;
    for chunk in refs.chunks(n) { k += e.embed_batch(chunk).unwrap().len(); }
    let el = t.elapsed().as_secs_f64();
    println!("{k} sentences in {el:.2}s = {:.1}/s", k as f64 / el);
}
