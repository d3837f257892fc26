//! Surprise as perplexity under an online Kneser-Ney model of the conversation so far (LUFY's
//! P, with an n-gram model instead of GPT-2).
//!
//! The context lines are observed in order as one stream (each line conditioned on the end of
//! the line before it, see [`KneserNey::observe_after`]); the utterance is then scored after
//! the preceding assistant turn — the bot utterance it answers — or after the last line when
//! the context has no assistant turn. Word probabilities mix the conversation model with the
//! background prior ([`mixed_prob`]), so a common word the conversation has not used yet is
//! not a surprise; new words share an open vocabulary of [`OPEN_VOCABULARY`] forms. Words are
//! scored online (a word the utterance repeats is cheaper the second time). The score is
//! `exp(−mean ln p)` over the utterance's words (1 for an utterance without words): at least
//! 1, higher = more surprising, capped at [`MAX_PERPLEXITY`].

use mnemos_core::memory_model::Line;
use mnemos_core::{ModelResult, Role};

use crate::ngram::{lm_tokens, mixed_prob, perplexity_of, KneserNey, OPEN_VOCABULARY};
use crate::Ctx;

/// Upper bound of the score, so it stays finite in `f32` whatever the input.
pub const MAX_PERPLEXITY: f32 = 1e9;

/// Perplexity of `utterance` given `context` (oldest first). See the module documentation.
pub fn surprise(ctx: &Ctx, context: &[Line], utterance: &str) -> ModelResult<f32> {
    let mut model = KneserNey::default().with_unseen_slots(OPEN_VOCABULARY);
    let mut previous: Vec<String> = Vec::new();
    let mut lines: Vec<Vec<String>> = Vec::with_capacity(context.len());
    for line in context {
        let tokens = lm_tokens(ctx.analyzer, &line.text);
        model.observe_after(&previous, &tokens);
        previous.clone_from(&tokens);
        lines.push(tokens);
    }
    let assistant = context.iter().rposition(|l| l.role == Role::Assistant);
    let anchor = assistant.or(context.len().checked_sub(1));
    let history = anchor
        .and_then(|index| lines.get(index))
        .map_or(&[][..], Vec::as_slice);
    let tokens = lm_tokens(ctx.analyzer, utterance);
    let log_probs = model.observe_scored_after(history, &tokens, mixed_prob);
    // Like a neural LM's perplexity, over the words only: the line end says little about
    // surprise and would dominate short replies.
    let words = log_probs.get(..tokens.len()).unwrap_or(&[]);
    let perplexity = perplexity_of(words) as f32;
    Ok(if perplexity.is_finite() {
        perplexity.clamp(1.0, MAX_PERPLEXITY)
    } else {
        MAX_PERPLEXITY
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_embed::HashEmbedder;
    use mnemos_text::Analyzer;

    fn score(context: &[Line], utterance: &str) -> f32 {
        let embedder = HashEmbedder::default();
        let ctx = Ctx {
            analyzer: Analyzer::shared(),
            embedder: &embedder,
        };
        surprise(&ctx, context, utterance).expect("surprise")
    }

    fn user(t: &str) -> Line {
        Line::new(Role::User, None, t)
    }
    fn bot(t: &str) -> Line {
        Line::new(Role::Assistant, None, t)
    }

    #[test]
    fn off_topic_is_more_surprising_english() {
        let context = [
            bot("What did you cook for dinner tonight?"),
            user("I cooked pasta with tomato sauce and fresh basil."),
            bot("Pasta with tomato sauce sounds delicious! Do you make the sauce yourself?"),
        ];
        let on_topic = score(
            &context,
            "Yes, I make the tomato sauce myself with fresh basil.",
        );
        let off_topic = score(
            &context,
            "My cousin bought a motorcycle in Osaka yesterday.",
        );
        assert!(on_topic >= 1.0 && on_topic.is_finite());
        assert!(off_topic > on_topic, "{off_topic} vs {on_topic}");
    }

    #[test]
    fn off_topic_is_more_surprising_chinese() {
        let context = [
            bot("你今天晚饭吃了什么？"),
            user("我做了番茄炒蛋和米饭。"),
            bot("番茄炒蛋很好吃！你经常自己做饭吗？"),
        ];
        let on_topic = score(&context, "对，我经常自己做番茄炒蛋。");
        let off_topic = score(&context, "股票市场昨天暴跌了百分之五。");
        assert!(off_topic > on_topic, "{off_topic} vs {on_topic}");
    }

    #[test]
    fn bounds_hold_for_odd_inputs() {
        for (context, utterance) in [
            (vec![], "hello"),
            (vec![user("")], "!!!"),
            (vec![bot("🎉🎉")], "🎉"),
            (vec![user("a b c")], &*"zzz ".repeat(2000)),
        ] {
            let s = score(&context, utterance);
            assert!(s.is_finite() && s >= 1.0, "{s}");
        }
    }

    #[test]
    fn the_preceding_bot_turn_is_the_history() {
        // The reply "twenty three" followed "how old are you" before; after the same question
        // it is less surprising than after an unrelated line.
        let mut context = Vec::new();
        for _ in 0..3 {
            context.push(bot("how old are you"));
            context.push(user("twenty three"));
        }
        context.push(bot("how old are you"));
        let after_question = score(&context, "twenty three");
        context.push(bot("nice weather today"));
        let after_other = score(&context, "twenty three");
        assert!(
            after_question < after_other,
            "{after_question} vs {after_other}"
        );
    }
}
