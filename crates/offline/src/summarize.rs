//! Extractive summaries under a token budget (EN + ZH).
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn summarize(_ctx: &Ctx, _texts: &[String], _level: u8, _token_budget: usize) -> ModelResult<String> {
        Err(ModelError::Unavailable("summarize: not implemented yet".into()))
}
