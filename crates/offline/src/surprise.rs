//! Surprise as perplexity under an online Kneser-Ney model of the conversation so far.
use mnemos_core::memory_model::Line;
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn surprise(_ctx: &Ctx, _context: &[Line], _utterance: &str) -> ModelResult<f32> {
        Err(ModelError::Unavailable("surprise: not implemented yet".into()))
}
