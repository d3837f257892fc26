//! Session topics by clustering plus keyword labels (M⁴ categorize).
use mnemos_core::memory_model::{CategorySummary, Line};
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn categorize(_ctx: &Ctx, _session: &[Line]) -> ModelResult<Vec<CategorySummary>> {
        Err(ModelError::Unavailable("categorize: not implemented yet".into()))
}
