//! Query-side tasks: sufficiency, helpfulness, extractive answers, multiple choice.
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn sufficient(_ctx: &Ctx, _query: &str, _memories: &[String]) -> ModelResult<bool> {
        Err(ModelError::Unavailable("sufficient: not implemented yet".into()))
}

pub fn helps(_ctx: &Ctx, _query: &str, _memories: &[String], _candidate: &str) -> ModelResult<bool> {
        Err(ModelError::Unavailable("helps: not implemented yet".into()))
}

pub fn answer(_ctx: &Ctx, _query: &str, _memories: &[String]) -> ModelResult<String> {
        Err(ModelError::Unavailable("answer: not implemented yet".into()))
}

pub fn choose(_ctx: &Ctx, _question: &str, _options: &[String], _memories: &[String]) -> ModelResult<usize> {
        Err(ModelError::Unavailable("choose: not implemented yet".into()))
}
