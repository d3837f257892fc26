//! Conflict detection and merging of two statements.
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn conflicts(_ctx: &Ctx, _previous: &str, _new: &str) -> ModelResult<bool> {
        Err(ModelError::Unavailable("conflicts: not implemented yet".into()))
}

pub fn merge(_ctx: &Ctx, _previous: &str, _new: &str) -> ModelResult<String> {
        Err(ModelError::Unavailable("merge: not implemented yet".into()))
}
