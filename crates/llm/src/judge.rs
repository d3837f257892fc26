//! The evaluation judge: one fixed prompt that grades an open answer against a reference, and
//! the parser of its one-word verdict. Fixed (and snapshot-tested) so judged numbers from
//! different runs are comparable.

use crate::prompts::ChatMessage;
use crate::LlmModel;
use mnemos_core::ModelResult;

/// The judge's instructions; `{question}`, `{gold}` and `{answer}` are filled in.
pub const JUDGE_PROMPT: &str = "You grade answers of a memory assistant.\n\
Question: {question}\n\
Reference answer: {gold}\n\
Assistant's answer: {answer}\n\
The answer is CORRECT if it states the same fact as the reference (wording, language, extra \
detail and date formats may differ; for dates, the same day/month/year) and WRONG if it \
misses, contradicts or only guesses at the reference. Reply with exactly one word: CORRECT or WRONG.";

/// The messages the judge sends for one answer.
pub fn judge_messages(question: &str, gold: &str, answer: &str) -> Vec<ChatMessage> {
    vec![ChatMessage::user(render(question, gold, answer))]
}

impl LlmModel {
    /// Grade `answer` against `gold`: Some(correct), or None when the reply is neither
    /// CORRECT nor WRONG (the caller reports it; nothing is guessed).
    pub fn judge(
        &self,
        question: &str,
        gold: &str,
        answer: &str,
    ) -> ModelResult<(Option<bool>, String)> {
        let reply = self.chat("judge", &judge_messages(question, gold, answer))?;
        Ok((parse_verdict(&reply), reply))
    }
}

fn render(question: &str, gold: &str, answer: &str) -> String {
    JUDGE_PROMPT
        .replace("{question}", question)
        .replace("{gold}", gold)
        .replace("{answer}", answer)
}

pub fn parse_verdict(reply: &str) -> Option<bool> {
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
