//! Importance 1..=10 from self-disclosure, entities, numbers, dates and novelty.
use mnemos_core::memory_model::Line;
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn rate_importance(_ctx: &Ctx, _past_summary: &str, _exchange: &[Line]) -> ModelResult<u8> {
        Err(ModelError::Unavailable("rate_importance: not implemented yet".into()))
}
