//! The optional LLM judge of `mnemos eval run --judge`: one fixed prompt grades an open answer
//! against the gold answer. The prompt is a constant (and snapshot-tested) so judged numbers
//! from different runs are comparable.

use anyhow::{Context as _, Result};
use mnemos_eval::runner::AskRecord;
use mnemos_llm::{ChatMessage, LlmConfig, LlmModel};

/// The judge's instructions; `{question}`, `{gold}` and `{answer}` are filled in.
pub const JUDGE_PROMPT: &str = "You grade answers of a memory assistant.\n\
Question: {question}\n\
Reference answer: {gold}\n\
Assistant's answer: {answer}\n\
The answer is CORRECT if it states the same fact as the reference (wording, language, extra \
detail and date formats may differ; for dates, the same day/month/year) and WRONG if it \
misses, contradicts or only guesses at the reference. Reply with exactly one word: CORRECT or WRONG.";

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
        let prompt = render(&record.question, gold, answer);
        let reply = self
            .model
            .chat("judge", &[ChatMessage::user(prompt)])
            .with_context(|| format!("judge on {}", record.question))?;
        let verdict = parse_verdict(&reply);
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

fn render(question: &str, gold: &str, answer: &str) -> String {
    JUDGE_PROMPT
        .replace("{question}", question)
        .replace("{gold}", gold)
        .replace("{answer}", answer)
}

fn parse_verdict(reply: &str) -> Option<bool> {
    let upper = reply.trim().to_uppercase();
    match (upper.find("CORRECT"), upper.find("WRONG")) {
        (Some(_), None) => Some(!upper.contains("INCORRECT")),
        (None, Some(_)) => Some(false),
        (Some(c), Some(w)) => Some(c < w && !upper[..c + 7].contains("INCORRECT")),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_snapshot() {
        let text = render("When did Ann move?", "May 2023", "In May 2023.");
        assert_eq!(
            text,
            "You grade answers of a memory assistant.\nQuestion: When did Ann move?\n\
Reference answer: May 2023\nAssistant's answer: In May 2023.\nThe answer is CORRECT if it \
states the same fact as the reference (wording, language, extra detail and date formats may \
differ; for dates, the same day/month/year) and WRONG if it misses, contradicts or only \
guesses at the reference. Reply with exactly one word: CORRECT or WRONG."
        );
    }

    #[test]
    fn verdicts() {
        assert_eq!(parse_verdict("CORRECT"), Some(true));
        assert_eq!(parse_verdict(" wrong."), Some(false));
        assert_eq!(parse_verdict("Incorrect"), Some(false));
        assert_eq!(
            parse_verdict("I think it is correct, not wrong"),
            Some(true)
        );
        assert_eq!(parse_verdict("maybe"), None);
    }
}
