//! MemBench's evaluation protocol, applied to any [`RetrievalDataset`].
//!
//! - **Time-aware streaming.** Items are observed one at a time in stream order; a question is
//!   asked at its position ([`Ask::after_item`]) and may only use what came before.
//! - **Scenarios.** *Participation* keeps every turn (user and assistant); *observation* keeps
//!   only the user's messages (the agent records, it does not speak). Questions whose every gold
//!   item is dropped by the scenario are left out and counted; others keep their remaining gold.
//! - **Long-history variants.** Other conversations' items are inserted as noise until the
//!   conversation reaches a token target. Noise comes in whole blocks (one source
//!   conversation's items, in order), each put in a random gap of the stream (before the first
//!   item, between two, or after the last), chosen by a seeded generator so a run is exactly
//!   reproducible. Real items keep their labels, so gold evidence stays valid; noise items get
//!   `noise:<source>:<label>` labels and the time and session of the real item before them (the
//!   first real item's when they come first), so time never goes backwards.
//!   Noise is drawn from conversations of a *different* scenario (MemDaily `roles`, `events`,
//!   …) where the dataset has scenarios, to make a contradicting fact less likely; the
//!   contamination that remains is measured ([`PreparedConversation::contaminated`]).
//! - **Capacity checkpoints.** Besides the final ask, a question can be asked again at history
//!   sizes (tokens) reached after its last gold item, which is how MemBench §4.4 draws accuracy
//!   against memory length.
//! - **Sampling.** MemBench samples uniformly per subset; `sample_per_category` keeps that many
//!   conversations per category (of the conversation's first question), chosen by the seed.

use std::collections::{BTreeMap, HashSet};

use mnemos_core::{Metadata, Role};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, Item, Question, RetrievalDataset};

/// Who speaks in the stream the engine observes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Scenario {
    /// User and assistant turns.
    Participation,
    /// The user's messages only.
    Observation,
}

impl Scenario {
    pub fn parse(text: &str) -> Result<Scenario, ProtocolError> {
        match text {
            "participation" => Ok(Scenario::Participation),
            "observation" => Ok(Scenario::Observation),
            other => Err(ProtocolError(format!(
                "unknown scenario {other:?}; expected participation or observation"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Participation => "participation",
            Scenario::Observation => "observation",
        }
    }

    fn keeps(self, item: &Item) -> bool {
        match self {
            Scenario::Participation => true,
            Scenario::Observation => item.role == Role::User,
        }
    }
}

/// A protocol setting that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

/// The long-history variant: pad each conversation with noise up to `target_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseSpec {
    pub target_tokens: usize,
    pub seed: u64,
}

/// Everything that turns a dataset into the stream and questions a run sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolSpec {
    pub scenario: Scenario,
    pub noise: Option<NoiseSpec>,
    /// Where noise comes from: "same dataset" or the external pool's name.
    pub noise_source: String,
    /// Keep at most this many conversations per category (None = all).
    pub sample_per_category: Option<usize>,
    /// Keep at most this many conversations in total, after sampling (None = all).
    pub max_conversations: Option<usize>,
    /// Seed of the sample (and, when `noise` is set, recorded beside the noise seed).
    pub sample_seed: u64,
    /// History sizes (tokens) at which each question is asked again once its gold is observed.
    pub checkpoints: Vec<usize>,
}

impl Default for ProtocolSpec {
    fn default() -> Self {
        ProtocolSpec {
            scenario: Scenario::Participation,
            noise: None,
            noise_source: "same dataset".to_string(),
            sample_per_category: None,
            max_conversations: None,
            sample_seed: 0,
            checkpoints: Vec::new(),
        }
    }
}

/// One time a question is put to the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    /// Index into the conversation's `questions`.
    pub question: usize,
    /// Items observed before the ask (a prefix of `items`).
    pub after_item: usize,
    /// Tokens of those items.
    pub history_tokens: usize,
    /// The question's own position (the others are capacity checkpoints).
    pub final_ask: bool,
    /// The checkpoint (history tokens asked for) of a capacity ask; None for the final ask.
    pub checkpoint: Option<usize>,
}

/// A conversation as the protocol streams it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreparedConversation {
    pub conversation: Conversation,
    /// Sorted by `after_item`, final and checkpoint asks interleaved.
    pub asks: Vec<Ask>,
    pub real_items: usize,
    pub noise_items: usize,
    /// Tokens of all items.
    pub tokens: usize,
    /// Questions whose correct choice or answer text appears in a noise item: their noise may
    /// contradict them.
    pub contaminated: Vec<String>,
}

/// A dataset prepared for one protocol setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreparedDataset {
    pub name: String,
    pub spec: ProtocolSpec,
    pub conversations: Vec<PreparedConversation>,
    /// Questions the protocol left out, per reason.
    pub dropped: BTreeMap<String, usize>,
}

impl PreparedDataset {
    pub fn questions(&self) -> usize {
        self.conversations
            .iter()
            .map(|c| c.conversation.questions.len())
            .sum()
    }

    pub fn asks(&self) -> usize {
        self.conversations.iter().map(|c| c.asks.len()).sum()
    }

    pub fn items(&self) -> usize {
        self.conversations
            .iter()
            .map(|c| c.conversation.items.len())
            .sum()
    }
}

/// SplitMix64: a tiny, well-mixed generator, so a seed means the same stream on every platform
/// and in every version of the dependencies.
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    pub fn new(seed: u64) -> Self {
        SeededRng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// A stable 64-bit hash of a string (FNV-1a), to derive per-conversation seeds.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn scenario_of(conversation: &Conversation) -> Option<&str> {
    conversation
        .questions
        .first()
        .and_then(|q| q.metadata.get("scenario"))
        .map(String::as_str)
}

/// Apply `spec` to `dataset`; `count_tokens` is the token estimate budgets use.
pub fn prepare(
    dataset: &RetrievalDataset,
    spec: &ProtocolSpec,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Result<PreparedDataset, ProtocolError> {
    prepare_with_pool(dataset, spec, None, count_tokens)
}

/// Items per noise block cut from an external pool's long conversations.
pub const NOISE_BLOCK_ITEMS: usize = 16;

/// [`prepare`] with noise drawn from `pool` (another dataset's conversations, cut into blocks
/// of [`NOISE_BLOCK_ITEMS`]) instead of the dataset's own other conversations. MemBench pads
/// with an unrelated corpus so noise cannot contradict the evidence; a pool from another
/// domain in the same language does the same here.
pub fn prepare_with_pool(
    dataset: &RetrievalDataset,
    spec: &ProtocolSpec,
    pool: Option<&[Conversation]>,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Result<PreparedDataset, ProtocolError> {
    let external: Option<Vec<Conversation>> = pool.map(|pool| {
        let mut blocks = Vec::new();
        for conversation in pool {
            let items: Vec<&Item> = conversation
                .items
                .iter()
                .filter(|i| spec.scenario.keeps(i))
                .collect();
            for (n, chunk) in items.chunks(NOISE_BLOCK_ITEMS).enumerate() {
                blocks.push(Conversation {
                    id: format!("{}#{n}", conversation.id),
                    items: chunk.iter().map(|i| (*i).clone()).collect(),
                    questions: Vec::new(),
                });
            }
        }
        blocks
    });
    if external.as_ref().is_some_and(|b| b.is_empty()) {
        return Err(ProtocolError("the noise pool has no items".into()));
    }
    if spec.noise.is_some_and(|n| n.target_tokens == 0) {
        return Err(ProtocolError("--noise-tokens must be positive".into()));
    }
    let mut dropped = BTreeMap::new();
    // The scenario applies to every conversation first: noise is drawn from filtered streams.
    let filtered: Vec<Conversation> = dataset
        .conversations
        .iter()
        .map(|c| filter_scenario(c, spec.scenario, &mut dropped))
        .collect();
    let chosen = sample(&filtered, spec);
    let mut conversations = Vec::with_capacity(chosen.len());
    for index in chosen {
        let conversation = &filtered[index];
        if conversation.questions.is_empty() {
            continue;
        }
        let (padded, noise_items) = match spec.noise {
            Some(noise) => pad_with_noise(
                conversation,
                external.as_deref().unwrap_or(&filtered),
                noise,
                count_tokens,
            ),
            None => (conversation.clone(), 0),
        };
        conversations.push(schedule(padded, noise_items, spec, count_tokens));
    }
    if conversations.is_empty() {
        return Err(ProtocolError(format!(
            "no questions left in {} under the {} scenario",
            dataset.name,
            spec.scenario.as_str()
        )));
    }
    Ok(PreparedDataset {
        name: dataset.name.clone(),
        spec: spec.clone(),
        conversations,
        dropped,
    })
}

fn filter_scenario(
    conversation: &Conversation,
    scenario: Scenario,
    dropped: &mut BTreeMap<String, usize>,
) -> Conversation {
    // New position of every old prefix length, to move each question's ask point.
    let mut kept_before = Vec::with_capacity(conversation.items.len() + 1);
    let mut items = Vec::new();
    for item in &conversation.items {
        kept_before.push(items.len());
        if scenario.keeps(item) {
            items.push(item.clone());
        }
    }
    kept_before.push(items.len());
    let labels: HashSet<&str> = items.iter().map(|i| i.label.as_str()).collect();
    let mut questions = Vec::new();
    for question in &conversation.questions {
        let gold: Vec<String> = question
            .gold
            .iter()
            .filter(|g| labels.contains(g.as_str()))
            .cloned()
            .collect();
        if gold.is_empty() {
            *dropped
                .entry(format!(
                    "gold only in turns the {} scenario drops",
                    scenario.as_str()
                ))
                .or_insert(0) += 1;
            continue;
        }
        let after_item = kept_before
            .get(question.after_item)
            .copied()
            .unwrap_or(items.len());
        questions.push(Question {
            gold,
            after_item,
            ..question.clone()
        });
    }
    Conversation {
        id: conversation.id.clone(),
        items,
        questions,
    }
}

fn sample(conversations: &[Conversation], spec: &ProtocolSpec) -> Vec<usize> {
    let mut chosen: Vec<usize> = match spec.sample_per_category {
        None => (0..conversations.len()).collect(),
        Some(per_category) => {
            let mut by_category: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
            for (i, c) in conversations.iter().enumerate() {
                if let Some(q) = c.questions.first() {
                    by_category.entry(q.category.as_str()).or_default().push(i);
                }
            }
            let mut rng = SeededRng::new(spec.sample_seed);
            let mut chosen = Vec::new();
            for (_, mut members) in by_category {
                rng.shuffle(&mut members);
                members.truncate(per_category);
                chosen.extend(members);
            }
            chosen.sort_unstable();
            chosen
        }
    };
    if let Some(max) = spec.max_conversations {
        chosen.truncate(max);
    }
    chosen
}

fn pad_with_noise(
    target: &Conversation,
    all: &[Conversation],
    noise: NoiseSpec,
    count_tokens: &dyn Fn(&str) -> usize,
) -> (Conversation, usize) {
    let own_tokens: usize = target.items.iter().map(|i| count_tokens(&i.text)).sum();
    if own_tokens >= noise.target_tokens || target.items.is_empty() {
        return (target.clone(), 0);
    }
    let own_scenario = scenario_of(target);
    let mut pool: Vec<usize> = (0..all.len())
        .filter(|&i| {
            let other = &all[i];
            other.id != target.id
                && !other.items.is_empty()
                && (own_scenario.is_none() || scenario_of(other) != own_scenario)
        })
        .collect();
    if pool.is_empty() {
        // A dataset with one scenario (or one conversation): any other conversation is noise.
        pool = (0..all.len())
            .filter(|&i| all[i].id != target.id && !all[i].items.is_empty())
            .collect();
    }
    let mut rng = SeededRng::new(noise.seed ^ stable_hash(&target.id));
    rng.shuffle(&mut pool);
    // Blocks of noise and the gap (0..=len) each goes into.
    let mut blocks: Vec<(usize, &Conversation)> = Vec::new();
    let mut total = own_tokens;
    let mut cursor = 0usize;
    while total < noise.target_tokens && !pool.is_empty() {
        // Cycle through the pool when one pass is not enough (a small dataset, a big target).
        let source = &all[pool[cursor % pool.len()]];
        cursor += 1;
        total += source
            .items
            .iter()
            .map(|i| count_tokens(&i.text))
            .sum::<usize>();
        blocks.push((rng.below(target.items.len() + 1), source));
        if cursor > pool.len() * 64 {
            break;
        }
    }
    // Stable: blocks in one gap keep their draw order.
    blocks.sort_by_key(|(gap, _)| *gap);
    let mut items = Vec::with_capacity(target.items.len() * 2);
    let mut kept_before = Vec::with_capacity(target.items.len() + 1);
    let mut next_block = 0usize;
    let mut noise_items = 0usize;
    for gap in 0..=target.items.len() {
        // Noise takes the time and session of the real item before it (the first one's at the
        // very start), so streamed time never goes backwards.
        let anchor = &target.items[gap.saturating_sub(1).min(target.items.len() - 1)];
        while let Some((block_gap, source)) = blocks.get(next_block) {
            if *block_gap != gap {
                break;
            }
            for item in &source.items {
                let mut metadata = Metadata::new();
                metadata.insert("noise_from".to_string(), source.id.clone());
                items.push(Item {
                    label: format!("noise:{}:{}", source.id, item.label),
                    role: item.role,
                    speaker: item.speaker.clone(),
                    text: item.text.clone(),
                    time: anchor.time,
                    session: anchor.session.clone(),
                    metadata,
                });
                noise_items += 1;
            }
            next_block += 1;
        }
        kept_before.push(items.len());
        if let Some(item) = target.items.get(gap) {
            items.push(item.clone());
        }
    }
    let questions = target
        .questions
        .iter()
        .map(|q| Question {
            // Asked after the real item it followed and any noise in the gap behind it.
            after_item: if q.after_item >= target.items.len() {
                items.len()
            } else {
                kept_before[q.after_item]
            },
            ..q.clone()
        })
        .collect();
    (
        Conversation {
            id: target.id.clone(),
            items,
            questions,
        },
        noise_items,
    )
}

fn schedule(
    conversation: Conversation,
    noise_items: usize,
    spec: &ProtocolSpec,
    count_tokens: &dyn Fn(&str) -> usize,
) -> PreparedConversation {
    // prefix[i] = tokens of items[..i].
    let mut prefix = Vec::with_capacity(conversation.items.len() + 1);
    prefix.push(0usize);
    for item in &conversation.items {
        let last = prefix.last().copied().unwrap_or(0);
        prefix.push(last + count_tokens(&item.text));
    }
    let position: BTreeMap<&str, usize> = conversation
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| (item.label.as_str(), i))
        .collect();
    let mut asks = Vec::new();
    for (qi, question) in conversation.questions.iter().enumerate() {
        let after_item = question.after_item.min(conversation.items.len());
        let last_gold = question
            .gold
            .iter()
            .filter_map(|g| position.get(g.as_str()))
            .max()
            .map_or(0, |p| p + 1);
        for &checkpoint in &spec.checkpoints {
            // The first prefix holding at least `checkpoint` tokens.
            let at = prefix.partition_point(|&t| t < checkpoint);
            if at >= last_gold && at < after_item {
                asks.push(Ask {
                    question: qi,
                    after_item: at,
                    history_tokens: prefix[at],
                    final_ask: false,
                    checkpoint: Some(checkpoint),
                });
            }
        }
        asks.push(Ask {
            question: qi,
            after_item,
            history_tokens: prefix[after_item],
            final_ask: true,
            checkpoint: None,
        });
    }
    asks.sort_by_key(|a| (a.after_item, a.question, a.final_ask));
    asks.dedup_by_key(|a| (a.after_item, a.question));
    let contaminated = conversation
        .questions
        .iter()
        .filter(|q| {
            let needle = q
                .correct_choice
                .as_ref()
                .and_then(|key| q.choices.iter().find(|(k, _)| k == key))
                .map(|(_, text)| text.clone())
                .or_else(|| q.answer.clone());
            needle.is_some_and(|needle| {
                needle.chars().count() >= 2
                    && conversation
                        .items
                        .iter()
                        .any(|i| i.label.starts_with("noise:") && i.text.contains(&needle))
            })
        })
        .map(|q| q.id.clone())
        .collect();
    let tokens = prefix.last().copied().unwrap_or(0);
    PreparedConversation {
        real_items: conversation.items.len() - noise_items,
        noise_items,
        tokens,
        contaminated,
        asks,
        conversation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::Timestamp;

    fn item(label: &str, role: Role, time: i64) -> Item {
        Item {
            label: label.to_string(),
            role,
            speaker: None,
            text: format!("words of {label}"),
            time: Some(Timestamp(time)),
            session: "s".to_string(),
            metadata: Metadata::new(),
        }
    }

    fn conversation(id: &str, scenario: &str, n: usize) -> Conversation {
        let items = (0..n)
            .map(|i| {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                item(&format!("{i}"), role, 1000 + i as i64)
            })
            .collect();
        let mut metadata = Metadata::new();
        metadata.insert("scenario".into(), scenario.into());
        Conversation {
            id: id.to_string(),
            items,
            questions: vec![Question {
                id: format!("{id}/q0"),
                text: "which?".into(),
                answer: Some("words of 2".into()),
                gold: vec!["2".into(), "3".into()],
                category: "simple".into(),
                memory_type: None,
                after_item: n,
                time: None,
                choices: Vec::new(),
                correct_choice: None,
                as_of: None,
                metadata,
            }],
        }
    }

    fn dataset() -> RetrievalDataset {
        let mut d = RetrievalDataset::new("toy");
        d.conversations = vec![
            conversation("a", "roles", 6),
            conversation("b", "events", 6),
            conversation("c", "roles", 6),
            conversation("d", "items", 4),
        ];
        d
    }

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    #[test]
    fn observation_keeps_user_items_and_remaps_gold() {
        let spec = ProtocolSpec {
            scenario: Scenario::Observation,
            ..ProtocolSpec::default()
        };
        let prepared = prepare(&dataset(), &spec, &words).expect("prepared");
        let a = &prepared.conversations[0];
        assert_eq!(a.conversation.items.len(), 3);
        assert!(a.conversation.items.iter().all(|i| i.role == Role::User));
        // Gold "3" was an assistant turn: only "2" remains.
        assert_eq!(a.conversation.questions[0].gold, vec!["2".to_string()]);
        assert_eq!(a.asks[0].after_item, 3);
        assert_eq!(a.tokens, 9);
    }

    #[test]
    fn noise_reaches_target_keeps_order_and_is_reproducible() {
        let spec = ProtocolSpec {
            noise: Some(NoiseSpec {
                target_tokens: 40,
                seed: 7,
            }),
            ..ProtocolSpec::default()
        };
        let first = prepare(&dataset(), &spec, &words).expect("prepared");
        let again = prepare(&dataset(), &spec, &words).expect("prepared");
        assert_eq!(first, again);
        let a = &first.conversations[0];
        assert!(a.tokens >= 40, "{} tokens", a.tokens);
        assert!(a.noise_items > 0);
        assert_eq!(a.real_items, 6);
        // Real items keep their order and labels; noise never comes from the same scenario.
        let real: Vec<&str> = a
            .conversation
            .items
            .iter()
            .filter(|i| !i.label.starts_with("noise:"))
            .map(|i| i.label.as_str())
            .collect();
        assert_eq!(real, vec!["0", "1", "2", "3", "4", "5"]);
        assert!(a
            .conversation
            .items
            .iter()
            .filter(|i| i.label.starts_with("noise:"))
            .all(|i| !i.label.starts_with("noise:c:")));
        // Time never goes backwards.
        let times: Vec<i64> = a
            .conversation
            .items
            .iter()
            .filter_map(|i| i.time.map(|t| t.0))
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        // The final ask sees everything.
        assert_eq!(
            a.asks.last().map(|x| x.after_item),
            Some(a.conversation.items.len())
        );
        let other_seed = ProtocolSpec {
            noise: Some(NoiseSpec {
                target_tokens: 40,
                seed: 8,
            }),
            ..ProtocolSpec::default()
        };
        let different = prepare(&dataset(), &other_seed, &words).expect("prepared");
        assert_ne!(
            first.conversations[0].conversation.items,
            different.conversations[0].conversation.items
        );
    }

    #[test]
    fn checkpoints_come_after_the_last_gold_item() {
        let spec = ProtocolSpec {
            noise: Some(NoiseSpec {
                target_tokens: 60,
                seed: 1,
            }),
            checkpoints: vec![1, 20, 40, 1000],
            ..ProtocolSpec::default()
        };
        let prepared = prepare(&dataset(), &spec, &words).expect("prepared");
        for c in &prepared.conversations {
            let position: BTreeMap<&str, usize> = c
                .conversation
                .items
                .iter()
                .enumerate()
                .map(|(i, item)| (item.label.as_str(), i))
                .collect();
            for ask in &c.asks {
                let q = &c.conversation.questions[ask.question];
                let last_gold = q.gold.iter().map(|g| position[g.as_str()]).max().unwrap();
                assert!(ask.after_item > last_gold);
                assert!(ask.after_item <= c.conversation.items.len());
            }
            assert_eq!(c.asks.iter().filter(|a| a.final_ask).count(), 1);
            assert!(c
                .asks
                .windows(2)
                .all(|w| w[0].after_item <= w[1].after_item));
        }
    }

    #[test]
    fn an_external_pool_supplies_the_noise_in_blocks() {
        let pool = vec![conversation("zz", "other", 40)];
        let spec = ProtocolSpec {
            noise: Some(NoiseSpec {
                target_tokens: 100,
                seed: 5,
            }),
            ..ProtocolSpec::default()
        };
        let prepared = prepare_with_pool(&dataset(), &spec, Some(&pool), &words).expect("ok");
        for c in &prepared.conversations {
            assert!(c.tokens >= 100);
            assert!(c
                .conversation
                .items
                .iter()
                .filter(|i| i.label.starts_with("noise:"))
                .all(|i| i.label.starts_with("noise:zz#")));
        }
        assert!(prepare_with_pool(&dataset(), &spec, Some(&[]), &words).is_err());
    }

    #[test]
    fn sampling_is_per_category_and_seeded() {
        let spec = ProtocolSpec {
            sample_per_category: Some(2),
            sample_seed: 3,
            ..ProtocolSpec::default()
        };
        let prepared = prepare(&dataset(), &spec, &words).expect("prepared");
        assert_eq!(prepared.conversations.len(), 2);
        let again = prepare(&dataset(), &spec, &words).expect("prepared");
        assert_eq!(prepared, again);
        assert!(Scenario::parse("watching").is_err());
        let zero = ProtocolSpec {
            noise: Some(NoiseSpec {
                target_tokens: 0,
                seed: 0,
            }),
            ..ProtocolSpec::default()
        };
        assert!(prepare(&dataset(), &zero, &words).is_err());
    }
}
