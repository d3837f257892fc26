//! Emotional arousal from a compiled lexicon (EN + ZH).
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn arousal(_ctx: &Ctx, _text: &str) -> ModelResult<f32> {
        Err(ModelError::Unavailable("arousal: not implemented yet".into()))
}
