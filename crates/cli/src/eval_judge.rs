//! The optional LLM judge of `mnemos eval run --judge` (the fixed prompt lives in
//! `mnemos_llm::judge`).

use anyhow::{Context as _, Result};
use mnemos_eval::runner::AskRecord;
use mnemos_llm::{LlmConfig, LlmModel};

pub struct Judge {
    model: LlmModel,
    id: String,
}

impl Judge {
    pub fn new(config: LlmConfig) -> Result<Self> {
        let id = format!("llm-judge:{}", config.model);
        let model = LlmModel::new(config).context("cannot set up the judge's [llm] endpoint")?;
        Ok(Judge { model, id })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Some(verdict) for an ask with both an answer and a gold answer; None otherwise, or when
    /// the reply is neither CORRECT nor WRONG (printed, never guessed).
    pub fn grade(&self, record: &AskRecord) -> Result<Option<bool>> {
        let (Some(answer), Some(gold)) = (&record.answer, &record.gold_answer) else {
            return Ok(None);
        };
        let (verdict, reply) = self
            .model
            .judge(&record.question_text, gold, answer)
            .with_context(|| format!("judge on {}", record.question))?;
        if verdict.is_none() {
            eprintln!(
                "note: the judge's reply on {} was neither CORRECT nor WRONG: {:?}",
                record.question,
                reply.chars().take(80).collect::<String>()
            );
        }
        Ok(verdict)
    }
}
