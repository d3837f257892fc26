//! Semantic vs episodic query classifier: logistic regression over embedding + lexical features.
use mnemos_core::memory_model::QueryClass;
use mnemos_core::{ModelError, ModelResult};
use crate::Ctx;

/// The trained query-type classifier.
pub struct QueryClassifier {}

impl QueryClassifier {
    pub fn for_embedder(_embedder_id: &str) -> Self {
        QueryClassifier {}
    }

    pub fn degradation(&self) -> Option<String> {
        None
    }

    pub fn classify(&self, _ctx: &Ctx, _query: &str) -> ModelResult<QueryClass> {
        Err(ModelError::Unavailable("classify_query: not implemented yet".into()))
    }
}
