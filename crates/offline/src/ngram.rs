//! Interpolated Kneser-Ney n-gram language model over analyzer tokens, plus a small built-in
//! background unigram prior for English and Chinese.
//!
//! Choices:
//! - **Tokens** are the analyzer's lowercase terms, stopwords included (Chinese = jieba words).
//!   A date yields several analyzer tokens over one span (ISO forms, year, month word); they are
//!   collapsed into one [`TokenUnit`] carrying the first (most specific) term, so a date is one
//!   word to the model.
//! - **Boundaries**: a line is padded with `order − 1` [`BOS`] markers and ends with [`EOS`].
//!   Conversations are modelled as a stream: a line can be observed *after* the previous line
//!   ([`KneserNey::observe_after`]), so its first words are conditioned on the end of that line
//!   and an [`EOS`] (how the conversation so far predicts the reply).
//! - **Online**: counts are updated in place as lines arrive; Kneser-Ney continuation counts and
//!   the count-of-counts behind the discounts are maintained incrementally, so the model can be
//!   queried between any two observations.
//! - **Discount**: one absolute discount per order, `D = n1 / (n1 + 2 n2)` from the current
//!   count-of-counts, clamped to [`MIN_DISCOUNT`, `MAX_DISCOUNT`] (0.75 before there are counts).
//! - **Unseen words**: the recursion bottoms out in a uniform distribution over the predictable
//!   vocabulary plus `<unk>` slots (one by default; [`OPEN_VOCABULARY`] for the conversation
//!   and text models, so a specific new word is rare rather than one of a handful), so every
//!   probability is > 0 and the probabilities of the vocabulary (observed words and [`EOS`])
//!   plus the `<unk>` class sum to 1 for every history.
//! - **Background prior**: a model built from one conversation or one text knows nothing about
//!   the language. [`background_prob`] is a compact unigram frequency list of English and
//!   Chinese function words (compiled by hand into `lexicon/prior_*.txt`, per-million
//!   frequencies); [`mixed_prob`] interpolates it with the local model so common words are cheap
//!   even the first time they appear.

use std::collections::HashMap;
use std::sync::OnceLock;

use mnemos_core::{ModelError, ModelResult};
use mnemos_text::{Analyzer, TokenKind};

/// Sentence-start marker (history only; never predicted).
pub const BOS: &str = "<s>";
/// Sentence-end marker (predicted like a word).
pub const EOS: &str = "</s>";
/// The class of every word the model has not seen.
pub const UNK: &str = "<unk>";
/// Default order: trigrams.
pub const DEFAULT_ORDER: usize = 3;
/// Unseen-word slots for models of one conversation or text (see
/// [`KneserNey::with_unseen_slots`]): roughly the working vocabulary of a language.
pub const OPEN_VOCABULARY: usize = 50_000;
/// Highest supported order (longer histories need far more text than a conversation holds).
pub const MAX_ORDER: usize = 8;
/// Discount bounds; the count-of-counts estimate is unstable on tiny samples.
pub const MIN_DISCOUNT: f64 = 0.1;
pub const MAX_DISCOUNT: f64 = 0.95;
/// Discount used while an order has no count-of-counts yet.
pub const DEFAULT_DISCOUNT: f64 = 0.75;

/// Weight of the local (conversation / text) model in [`mixed_prob`]; the rest goes to the
/// background prior.
pub const LOCAL_WEIGHT: f64 = 0.8;
/// Background probability of a word not on the prior lists: about half of running text is
/// function words on the lists; the other half is spread over a nominal open vocabulary of
/// ~250,000 word forms.
pub const UNLISTED_PRIOR: f64 = 2e-6;

/// One word of a text as the language model sees it: analyzer tokens sharing a span (a date's
/// several forms) collapsed into one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenUnit {
    /// Lowercase normalized term (a date's most specific form).
    pub term: String,
    pub kind: TokenKind,
    /// Byte span in the original text.
    pub start: usize,
    pub end: usize,
}

/// The text's words in order, dates collapsed (see [`TokenUnit`]).
pub fn token_units(analyzer: &Analyzer, text: &str) -> Vec<TokenUnit> {
    let mut units: Vec<TokenUnit> = Vec::new();
    for token in analyzer.tokens(text) {
        if let Some(last) = units.last_mut() {
            // A date's components lie inside the span of its first token.
            if token.start < last.end {
                last.end = last.end.max(token.end);
                continue;
            }
        }
        units.push(TokenUnit {
            term: token.term,
            kind: token.kind,
            start: token.start,
            end: token.end,
        });
    }
    units
}

/// The terms of [`token_units`]: what the model observes and scores.
pub fn lm_tokens(analyzer: &Analyzer, text: &str) -> Vec<String> {
    token_units(analyzer, text)
        .into_iter()
        .map(|u| u.term)
        .collect()
}

type Id = u32;

/// Reserved ids.
const BOS_ID: Id = 0;
const EOS_ID: Id = 1;

/// Totals of one history at one order.
#[derive(Clone, Copy, Debug, Default)]
struct HistoryStats {
    /// Sum of the counts of all words after this history.
    total: u64,
    /// Number of distinct words after this history.
    types: u64,
}

/// The counts of one order `k`: raw counts at the highest order, continuation counts (number of
/// distinct left extensions) below it.
#[derive(Clone, Debug, Default)]
struct Level {
    counts: HashMap<Vec<Id>, u64>,
    histories: HashMap<Vec<Id>, HistoryStats>,
    /// Count-of-counts for the discount estimate.
    n1: u64,
    n2: u64,
}

impl Level {
    fn discount(&self) -> f64 {
        if self.n1 == 0 || self.n2 == 0 {
            // Without both, n1/(n1+2n2) degenerates to 0 or 1.
            return DEFAULT_DISCOUNT;
        }
        let d = self.n1 as f64 / (self.n1 as f64 + 2.0 * self.n2 as f64);
        d.clamp(MIN_DISCOUNT, MAX_DISCOUNT)
    }
}

/// An interpolated Kneser-Ney model that learns online. See the module documentation.
#[derive(Clone, Debug)]
pub struct KneserNey {
    order: usize,
    ids: HashMap<String, Id>,
    words: Vec<String>,
    /// `levels[k - 1]` holds the k-grams.
    levels: Vec<Level>,
    /// Lines observed.
    lines: u64,
    /// Slots of the uniform base distribution reserved for words not seen yet.
    unseen_slots: f64,
}

impl Default for KneserNey {
    fn default() -> Self {
        // DEFAULT_ORDER is within bounds.
        Self::with_valid_order(DEFAULT_ORDER)
    }
}

impl KneserNey {
    /// An empty model of the given order (1..=[`MAX_ORDER`]).
    pub fn new(order: usize) -> ModelResult<Self> {
        if !(1..=MAX_ORDER).contains(&order) {
            return Err(ModelError::invalid(format!(
                "n-gram order must be in 1..={MAX_ORDER}, got {order}"
            )));
        }
        Ok(Self::with_valid_order(order))
    }

    fn with_valid_order(order: usize) -> Self {
        KneserNey {
            order,
            ids: HashMap::from([(BOS.to_string(), BOS_ID), (EOS.to_string(), EOS_ID)]),
            words: vec![BOS.to_string(), EOS.to_string()],
            levels: vec![Level::default(); order],
            lines: 0,
            unseen_slots: 1.0,
        }
    }

    /// Reserve `slots` (at least 1) word forms for unseen words in the uniform base
    /// distribution: with the classic single `<unk>` slot a model that has seen ten words gives
    /// any new word a probability near 1/11; a realistic open vocabulary
    /// ([`OPEN_VOCABULARY`]) makes a specific new word as unlikely as it is in real text. The
    /// `<unk>` class gets all the slots, so the distribution still sums to 1.
    pub fn with_unseen_slots(mut self, slots: usize) -> Self {
        self.unseen_slots = slots.max(1) as f64;
        self
    }

    pub fn order(&self) -> usize {
        self.order
    }

    /// Lines observed so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Number of predictable words seen so far ([`EOS`] included, `<unk>` not).
    pub fn vocabulary_size(&self) -> usize {
        self.levels.first().map_or(0, |l| l.counts.len())
    }

    /// The predictable words seen so far ([`EOS`] included), in no particular order.
    pub fn vocabulary(&self) -> Vec<&str> {
        let Some(unigrams) = self.levels.first() else {
            return Vec::new();
        };
        unigrams
            .counts
            .keys()
            .filter_map(|gram| gram.first())
            .filter_map(|&id| self.words.get(id as usize).map(String::as_str))
            .collect()
    }

    /// Observe one line (a sentence) on its own: `<s> … <s> tokens </s>`.
    pub fn observe<S: AsRef<str>>(&mut self, tokens: &[S]) {
        self.observe_after::<S, S>(&[], tokens);
    }

    /// Observe one line that follows `previous` (the preceding line's tokens) in a stream: its
    /// first words are conditioned on the end of `previous` and an [`EOS`]. With an empty
    /// `previous` this is [`KneserNey::observe`].
    pub fn observe_after<P: AsRef<str>, S: AsRef<str>>(&mut self, previous: &[P], tokens: &[S]) {
        self.observe_scored_after(previous, tokens, |p, _| p);
    }

    /// Like [`KneserNey::observe_after`], returning `ln adjust(p, token)` of every token and
    /// then of the closing [`EOS`], each scored *before* it is counted: the online
    /// (prequential) log-likelihood, where a word is cheap when it repeats what came before,
    /// even within the line.
    pub fn observe_scored_after<P: AsRef<str>, S: AsRef<str>>(
        &mut self,
        previous: &[P],
        tokens: &[S],
        adjust: impl Fn(f64, &str) -> f64,
    ) -> Vec<f64> {
        let tail: Vec<Id> = self
            .tail(previous)
            .iter()
            .map(|t| self.intern(t.as_ref()))
            .collect();
        let mut sequence = self.start_history(&tail, !previous.is_empty());
        let width = self.order - 1;
        let mut out = Vec::with_capacity(tokens.len() + 1);
        let items = tokens.iter().map(AsRef::as_ref).chain(std::iter::once(EOS));
        for token in items {
            let context = sequence.get(sequence.len() - width..).unwrap_or(&[]);
            let p = adjust(self.prob_ids(context, self.ids.get(token).copied()), token);
            out.push(p.max(f64::MIN_POSITIVE).ln());
            let id = self.intern(token);
            sequence.push(id);
            if let Some(gram) = sequence.get(sequence.len() - self.order..) {
                let gram = gram.to_vec();
                self.add(self.order, &gram);
            }
        }
        self.lines += 1;
        out
    }

    /// Probability of `token` after `history` (the preceding tokens; only the last `order − 1`
    /// matter; a shorter history is padded with [`BOS`]). An unseen token gets its share of the
    /// `<unk>` class; `token == UNK` gives the whole class.
    pub fn prob<S: AsRef<str>>(&self, history: &[S], token: &str) -> f64 {
        let context = self.history_ids(history);
        let p = self.prob_ids(&context, self.ids.get(token).copied());
        if token == UNK {
            p * self.unseen_slots
        } else {
            p
        }
    }

    /// Natural log of [`KneserNey::prob`].
    pub fn log_prob<S: AsRef<str>>(&self, history: &[S], token: &str) -> f64 {
        self.prob(history, token).ln()
    }

    /// Perplexity of one line `<s> tokens </s>`: `exp(−mean ln p)` over the tokens and [`EOS`].
    /// At least 1 and finite.
    pub fn perplexity<S: AsRef<str>>(&self, tokens: &[S]) -> f64 {
        self.perplexity_after::<S, S>(&[], tokens)
    }

    /// Perplexity of a line following `previous` in a stream (see
    /// [`KneserNey::observe_after`]).
    pub fn perplexity_after<P: AsRef<str>, S: AsRef<str>>(
        &self,
        previous: &[P],
        tokens: &[S],
    ) -> f64 {
        let log_probs = self.line_log_probs(previous, tokens, |p, _| p);
        perplexity_of(&log_probs)
    }

    /// `ln p` of every token of a line following `previous`, then of the closing [`EOS`], with
    /// each probability passed through `adjust(p, token)` (e.g. [`mixed_prob`]).
    pub fn line_log_probs<P: AsRef<str>, S: AsRef<str>>(
        &self,
        previous: &[P],
        tokens: &[S],
        adjust: impl Fn(f64, &str) -> f64,
    ) -> Vec<f64> {
        let tail: Vec<Id> = self
            .tail(previous)
            .iter()
            .map(|t| self.ids.get(t.as_ref()).copied().unwrap_or(Id::MAX))
            .collect();
        let mut context = self.start_history(&tail, !previous.is_empty());
        let mut out = Vec::with_capacity(tokens.len() + 1);
        let items = tokens.iter().map(AsRef::as_ref).chain(std::iter::once(EOS));
        for token in items {
            let id = self.ids.get(token).copied();
            let p = adjust(self.prob_ids(&context, id), token);
            out.push(p.max(f64::MIN_POSITIVE).ln());
            if !context.is_empty() {
                context.remove(0);
                // Unseen words in the history are a history nothing was counted after.
                context.push(id.unwrap_or(Id::MAX));
            }
        }
        out
    }

    /// The `order − 1` ids a line starts after: [`BOS`] padding, then the end of the previous
    /// line (`tail`, its last ids) followed by [`EOS`] when there is a previous line.
    fn start_history(&self, tail: &[Id], has_previous: bool) -> Vec<Id> {
        let width = self.order - 1;
        let mut history = vec![BOS_ID; width];
        if has_previous && width > 0 {
            history.extend_from_slice(tail);
            history.push(EOS_ID);
        }
        let excess = history.len().saturating_sub(width);
        history.drain(..excess);
        history
    }

    /// The last `order − 2` tokens of a previous line (what fits before its [`EOS`]).
    fn tail<'p, P: AsRef<str>>(&self, previous: &'p [P]) -> &'p [P] {
        let keep = previous.len().min(self.order.saturating_sub(2));
        previous.get(previous.len() - keep..).unwrap_or(&[])
    }

    fn history_ids<S: AsRef<str>>(&self, history: &[S]) -> Vec<Id> {
        let width = self.order - 1;
        let mut ids = vec![BOS_ID; width];
        for token in history {
            ids.push(self.ids.get(token.as_ref()).copied().unwrap_or(Id::MAX));
        }
        let excess = ids.len().saturating_sub(width);
        ids.drain(..excess);
        ids
    }

    fn intern(&mut self, token: &str) -> Id {
        if let Some(&id) = self.ids.get(token) {
            return id;
        }
        // Past u32::MAX - 1 distinct words (far beyond any input a task accepts) new words
        // share the unknown id instead of overflowing.
        let Ok(id) = Id::try_from(self.words.len()) else {
            return Id::MAX;
        };
        if id == Id::MAX {
            return Id::MAX;
        }
        self.ids.insert(token.to_string(), id);
        self.words.push(token.to_string());
        id
    }

    /// Count one occurrence of `gram` at order `k` (= `gram.len()`); a new type adds one
    /// continuation count to its suffix at order `k − 1`.
    fn add(&mut self, k: usize, gram: &[Id]) {
        let Some(level) = k.checked_sub(1).and_then(|i| self.levels.get_mut(i)) else {
            return;
        };
        let Some((history, _)) = gram.split_last().map(|(w, h)| (h, w)) else {
            return;
        };
        let count = level.counts.entry(gram.to_vec()).or_insert(0);
        let old = *count;
        *count += 1;
        match old {
            0 => level.n1 += 1,
            1 => {
                level.n1 -= 1;
                level.n2 += 1;
            }
            2 => level.n2 -= 1,
            _ => {}
        }
        let stats = level.histories.entry(history.to_vec()).or_default();
        stats.total += 1;
        if old == 0 {
            stats.types += 1;
            if k > 1 {
                if let Some(suffix) = gram.get(1..) {
                    self.add(k - 1, suffix);
                }
            }
        }
    }

    /// Interpolated KN probability of `word` (`None` = unseen) after `context` (`order − 1`
    /// ids), computed from the uniform base upwards.
    fn prob_ids(&self, context: &[Id], word: Option<Id>) -> f64 {
        let vocabulary = self.vocabulary_size() as f64;
        let seen = word.is_some_and(|id| id != BOS_ID && id != Id::MAX);
        // Uniform over the vocabulary plus the unseen slots.
        let mut p = 1.0 / (vocabulary + self.unseen_slots);
        let mut gram: Vec<Id> = Vec::with_capacity(self.order);
        for (index, level) in self.levels.iter().enumerate() {
            let history_len = index;
            let Some(history) = context.get(context.len().saturating_sub(history_len)..) else {
                continue;
            };
            if history.len() != history_len {
                continue;
            }
            let Some(stats) = level.histories.get(history) else {
                continue;
            };
            if stats.total == 0 {
                continue;
            }
            let count = match word {
                Some(id) if seen => {
                    gram.clear();
                    gram.extend_from_slice(history);
                    gram.push(id);
                    level.counts.get(gram.as_slice()).copied().unwrap_or(0)
                }
                _ => 0,
            };
            let discount = level.discount();
            let total = stats.total as f64;
            let direct = (count as f64 - discount).max(0.0) / total;
            let backoff = discount * stats.types as f64 / total;
            p = direct + backoff * p;
        }
        // An unseen word (or BOS, which is never predicted) has no counts anywhere and keeps
        // one unseen slot's share.
        p
    }

    /// The word behind an id (for diagnostics and tests).
    #[cfg(test)]
    fn word(&self, id: Id) -> Option<&str> {
        self.words.get(id as usize).map(String::as_str)
    }
}

/// `exp(−mean ln p)`, at least 1; 1 for an empty list.
pub fn perplexity_of(log_probs: &[f64]) -> f64 {
    if log_probs.is_empty() {
        return 1.0;
    }
    let mean = log_probs.iter().sum::<f64>() / log_probs.len() as f64;
    let ppl = (-mean).exp();
    if ppl.is_finite() {
        ppl.max(1.0)
    } else {
        f64::MAX
    }
}

/// Probability of `term` under the built-in background unigram prior (function words of
/// English and Chinese; [`UNLISTED_PRIOR`] for everything else; 0 for [`EOS`], which the
/// prior does not model).
pub fn background_prob(term: &str) -> f64 {
    if term == EOS {
        return 0.0;
    }
    background().get(term).copied().unwrap_or(UNLISTED_PRIOR)
}

/// `LOCAL_WEIGHT · local + (1 − LOCAL_WEIGHT) · background`; for [`EOS`] the local model
/// alone (renormalized), since the background does not model line ends.
pub fn mixed_prob(local: f64, term: &str) -> f64 {
    if term == EOS {
        return local;
    }
    LOCAL_WEIGHT * local + (1.0 - LOCAL_WEIGHT) * background_prob(term)
}

const PRIOR_EN: &str = include_str!("lexicon/prior_en.txt");
const PRIOR_ZH: &str = include_str!("lexicon/prior_zh.txt");

/// `term<TAB or spaces>per-million` lines; `#` comments and blank lines skipped. Entries are
/// normalized through the analyzer so they match what [`lm_tokens`] produces.
fn background() -> &'static HashMap<String, f64> {
    static PRIOR: OnceLock<HashMap<String, f64>> = OnceLock::new();
    PRIOR.get_or_init(|| {
        let analyzer = Analyzer::shared();
        let mut map = HashMap::new();
        for (word, per_million) in PRIOR_EN
            .lines()
            .chain(PRIOR_ZH.lines())
            .filter_map(parse_frequency_line)
        {
            if let [term] = lm_tokens(analyzer, word).as_slice() {
                *map.entry(term.clone()).or_insert(0.0) += per_million / 1e6;
            }
        }
        map
    })
}

/// One `word frequency` line of a prior list.
pub(crate) fn parse_frequency_line(line: &str) -> Option<(&str, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut parts = line.split_whitespace();
    let word = parts.next()?;
    let value: f64 = parts.next()?.parse().ok()?;
    (value.is_finite() && value > 0.0).then_some((word, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn total_mass(model: &KneserNey, history: &[String]) -> f64 {
        let mut sum: f64 = model
            .vocabulary()
            .iter()
            .map(|w| model.prob(history, w))
            .sum();
        sum += model.prob(history, UNK);
        sum
    }

    #[test]
    fn orders_are_validated() {
        assert!(KneserNey::new(0).is_err());
        assert!(KneserNey::new(MAX_ORDER + 1).is_err());
        assert_eq!(KneserNey::new(2).map(|m| m.order()).ok(), Some(2));
    }

    #[test]
    fn empty_model_is_uniform_over_eos_and_unk() {
        let model = KneserNey::default();
        assert_eq!(model.vocabulary_size(), 0);
        let p = model.prob::<&str>(&[], "hello");
        assert!((p - 1.0).abs() < 1e-12, "{p}");
        assert!(model.perplexity(&["a", "b"]) >= 1.0);
    }

    #[test]
    fn seen_continuations_beat_unseen_ones() {
        let mut model = KneserNey::default();
        for _ in 0..3 {
            model.observe(&toks("i like green tea"));
        }
        model.observe(&toks("i like coffee"));
        let h = toks("i like");
        assert!(model.prob(&h, "green") > model.prob(&h, "coffee"));
        assert!(model.prob(&h, "coffee") > model.prob(&h, "pizza"));
        assert!(model.prob(&h, "pizza") > 0.0);
        assert!(
            model.perplexity(&toks("i like green tea"))
                < model.perplexity(&toks("tea green like i"))
        );
    }

    #[test]
    fn chinese_words_from_the_analyzer() {
        let analyzer = Analyzer::shared();
        let mut model = KneserNey::default();
        model.observe(&lm_tokens(analyzer, "我喜欢喝绿茶。"));
        model.observe(&lm_tokens(analyzer, "我喜欢看电影。"));
        let seen = lm_tokens(analyzer, "我喜欢喝绿茶");
        let unseen = lm_tokens(analyzer, "股票市场下跌");
        assert!(model.perplexity(&seen) < model.perplexity(&unseen));
        let vocab = model.vocabulary();
        assert!(vocab.contains(&"喜欢"), "{vocab:?}");
    }

    #[test]
    fn dates_collapse_into_one_unit() {
        let units = token_units(Analyzer::shared(), "We met on 8 May 2023 in Paris");
        let terms: Vec<&str> = units.iter().map(|u| u.term.as_str()).collect();
        assert!(terms.contains(&"2023-05-08"), "{terms:?}");
        assert!(!terms.contains(&"2023"), "{terms:?}");
        assert!(units.windows(2).all(|w| w[0].end <= w[1].start));
    }

    #[test]
    fn stream_observation_conditions_on_the_previous_line() {
        let mut model = KneserNey::default();
        let question = toks("how old are you");
        let answer = toks("twenty three");
        for _ in 0..3 {
            model.observe_after(&question, &answer);
        }
        model.observe(&toks("nice weather today"));
        let after_question = model.perplexity_after(&question, &answer);
        let cold = model.perplexity_after(&toks("nice weather today"), &answer);
        assert!(after_question < cold, "{after_question} vs {cold}");
    }

    #[test]
    fn unseen_slots_make_new_words_rare() {
        let mut classic = KneserNey::default();
        let mut open = KneserNey::default().with_unseen_slots(OPEN_VOCABULARY);
        let mut scored = KneserNey::default().with_unseen_slots(OPEN_VOCABULARY);
        for model in [&mut classic, &mut open] {
            model.observe(&toks("a b c d"));
        }
        assert!(classic.prob::<&str>(&[], "zebra") > 0.01);
        assert!(open.prob::<&str>(&[], "zebra") < 1e-4);
        // The <unk> class holds the whole backoff mass in the open model.
        let open_unk = open.prob::<&str>(&[], UNK);
        assert!(
            open_unk > classic.prob::<&str>(&[], UNK) && open_unk < 1.0,
            "{open_unk}"
        );
        // Online scoring: the repeated word is cheaper the second time, within one line.
        let lp = scored.observe_scored_after::<&str, &str>(&[], &["x", "y", "x"], |p, _| p);
        assert_eq!(lp.len(), 4);
        assert!(lp[2] > lp[0], "{lp:?}");
        assert_eq!(scored.lines(), 1);
    }

    #[test]
    fn unseen_history_words_fall_back_to_lower_orders() {
        let mut model = KneserNey::default();
        model.observe(&toks("a b c"));
        let p = model.prob(&toks("zzz qqq"), "c");
        assert!(p > 0.0 && p < 1.0);
        assert!((total_mass(&model, &toks("zzz qqq")) - 1.0).abs() < 1e-9);
        assert_eq!(model.word(BOS_ID), Some(BOS));
    }

    #[test]
    fn background_prior_makes_function_words_cheap() {
        assert!(background_prob("the") > 0.01);
        assert!(background_prob("的") > 0.01);
        assert_eq!(background_prob("cancer"), UNLISTED_PRIOR);
        assert!(mixed_prob(0.0, "the") > mixed_prob(0.0, "cancer"));
        for line in PRIOR_EN.lines().chain(PRIOR_ZH.lines()) {
            let t = line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                assert!(parse_frequency_line(t).is_some(), "bad prior line {t:?}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn probabilities_sum_to_one(
            lines in prop::collection::vec(prop::collection::vec(0u8..12, 0..10), 1..8),
            histories in prop::collection::vec(prop::collection::vec(0u8..14, 0..4), 1..5),
            order in 1usize..5,
            unseen in 1usize..1000,
        ) {
            let word = |i: &u8| format!("w{i}");
            let mut model = KneserNey::new(order)
                .map_err(|e| TestCaseError::fail(e.to_string()))?
                .with_unseen_slots(unseen);
            let mut previous: Vec<String> = Vec::new();
            for (n, line) in lines.iter().enumerate() {
                let tokens: Vec<String> = line.iter().map(word).collect();
                if n % 2 == 0 {
                    model.observe(&tokens);
                } else {
                    model.observe_after(&previous, &tokens);
                }
                previous = tokens;
            }
            let mut all = histories.clone();
            all.push(Vec::new());
            for history in &all {
                let mut h: Vec<String> = history.iter().map(word).collect();
                h.insert(0, BOS.to_string());
                let sum = total_mass(&model, &h);
                prop_assert!((sum - 1.0).abs() < 1e-3, "sum {} for {:?}", sum, h);
                for w in model.vocabulary() {
                    prop_assert!(model.prob(&h, w) > 0.0);
                }
                let after = model.perplexity_after(&h, &h);
                prop_assert!(after.is_finite() && after >= 1.0);
            }
        }
    }
}
