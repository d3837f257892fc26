//! Temporary: replaced by the scoring module.
pub fn answer_in_context(gold: &str, context: &str) -> bool {
    context.to_lowercase().contains(&gold.to_lowercase())
}
pub fn token_f1(_prediction: &str, _gold: &str) -> f64 {
    0.0
}
