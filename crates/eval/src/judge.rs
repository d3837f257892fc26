//! The optional LLM judge of `eval run` (the fixed prompt lives in `mnemos_llm::judge`): grades
//! an open answer against the gold answer as CORRECT or WRONG.

use mnemos_llm::{LlmConfig, LlmModel};

use crate::error::EvalError;
use crate::runner::AskRecord;

pub struct Judge {
    model: LlmModel,
    id: String,
}

/// A judge's grade of one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No answer or no gold answer: nothing to grade.
    Ungraded,
    Graded(bool),
    /// The reply was neither CORRECT nor WRONG (never guessed); its start, for the log.
    Unclear(String),
}

impl Verdict {
    /// The grade as an ask record keeps it.
    pub fn correct(&self) -> Option<bool> {
        match self {
            Verdict::Graded(correct) => Some(*correct),
            Verdict::Ungraded | Verdict::Unclear(_) => None,
        }
    }
}

impl Judge {
    pub fn new(config: LlmConfig) -> Result<Self, EvalError> {
        let id = format!("llm-judge:{}", config.model);
        let model = LlmModel::new(config)?;
        Ok(Judge { model, id })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The grade of an ask with both an answer and a gold answer.
    pub fn grade(&self, record: &AskRecord) -> Result<Verdict, EvalError> {
        let (Some(answer), Some(gold)) = (&record.answer, &record.gold_answer) else {
            return Ok(Verdict::Ungraded);
        };
        let (verdict, reply) = self
            .model
            .judge(&record.question_text, gold, answer)
            .map_err(|source| EvalError::Judge {
                question: record.question.clone(),
                source,
            })?;
        Ok(match verdict {
            Some(correct) => Verdict::Graded(correct),
            None => Verdict::Unclear(reply.chars().take(80).collect()),
        })
    }
}
