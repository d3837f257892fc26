//! Rule- and pattern-based persona extraction (EN + ZH).
use mnemos_core::memory_model::{Line, PersonaSchema, PersonaValue};
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

pub fn persona_snapshot(_ctx: &Ctx, _window: &[Line], _schema: &PersonaSchema) -> ModelResult<Vec<PersonaValue>> {
        Err(ModelError::Unavailable("persona_snapshot: not implemented yet".into()))
}
