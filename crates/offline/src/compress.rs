//! Compression by dropping low self-information tokens; recoverability check.
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn compress(_ctx: &Ctx, _text: &str) -> ModelResult<String> {
        Err(ModelError::Unavailable("compress: not implemented yet".into()))
}

pub fn recoverable(_ctx: &Ctx, _original: &str, _compressed: &str) -> ModelResult<bool> {
        Err(ModelError::Unavailable("recoverable: not implemented yet".into()))
}
