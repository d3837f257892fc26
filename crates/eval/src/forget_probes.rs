//! Forget-request probes: a personal detail stated twice, an unrelated fact, then a request to
//! forget the detail (or a line that only speaks of forgetting), then the questions an agent
//! would ask.
//!
//! As for the update probes ([`crate::update_probes`]), the probes are generated here from
//! templates written for this purpose ([`templates`]), English and Chinese, in two halves that
//! share no phrasing and no value; a probe's lines are user messages inserted into a window of
//! a host conversation (LoCoMo for English, a ZH-4O dialogue for Chinese), each followed by
//! the other speaker's acknowledgment, and the questions are asked after the window. No value
//! of a probe appears in its window, so a value found later comes from the probe.

mod templates;

use mnemos_core::{Metadata, Timestamp};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, Item, Question};
use crate::protocol::{Ask, PreparedConversation, SeededRng};
use crate::update_probes::{free_window, interleave, Half, ProbeLanguage, ProbeSettings};
use templates::{ForgetTemplate, Keeper, KEEPERS, TEMPLATES};

/// What a probe tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgetKind {
    /// The user asks to forget the detail: it must be gone, a tombstone in its place.
    Request,
    /// The user speaks of forgetting without asking for anything: the detail stays.
    NotARequest,
}

impl ForgetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ForgetKind::Request => "request",
            ForgetKind::NotARequest => "not_a_request",
        }
    }
}

/// Item labels of a probe's inserted messages: `forget-probe-<n>` for the n-th line.
pub const LINE_LABEL: &str = "forget-probe";

/// One generated probe, ready to stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetProbe {
    /// `test-en-email-request1`: half, language, topic, kind and value.
    pub id: String,
    pub half: Half,
    pub language: ProbeLanguage,
    pub topic: String,
    pub kind: ForgetKind,
    pub host: String,
    /// The detail's value: what must be gone after a request.
    pub value: String,
    /// The unrelated fact's value: what must stay.
    pub kept_value: String,
    /// The inserted user lines, in order: statement, unrelated fact, statement, last line.
    pub lines: Vec<String>,
    /// The request (or the line that only speaks of forgetting).
    pub last_line: String,
    /// Asked about the detail (question 0 of the stream).
    pub question: String,
    /// Asked about the unrelated fact (question 1).
    pub kept_question: String,
    /// Search words for the detail.
    pub search: String,
    /// When the two statements of the detail were said.
    pub statement_times: Vec<Timestamp>,
    pub stream: PreparedConversation,
}

/// Every probe of `settings.half` in `settings.language`: per topic, three requests (one per
/// value) and one line that is not a request, each in a window of a host (round robin,
/// positions from the seed) that holds none of its values.
pub fn forget_probes(
    settings: &ProbeSettings<'_>,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Vec<ForgetProbe> {
    let hosts: Vec<&Conversation> = settings
        .hosts
        .iter()
        .filter(|h| h.items.len() >= settings.window.max(12))
        .collect();
    let Some(keeper) = KEEPERS
        .iter()
        .find(|k| k.half == settings.half && k.language == settings.language)
    else {
        return Vec::new();
    };
    if hosts.is_empty() {
        return Vec::new();
    }
    let mut rng = SeededRng::new(settings.seed);
    let mut next_host = 0usize;
    let mut probes = Vec::new();
    let templates = TEMPLATES
        .iter()
        .filter(|t| t.half == settings.half && t.language == settings.language);
    for template in templates {
        for (index, value) in template.values.iter().enumerate() {
            let kind = if index + 1 < template.values.len() {
                ForgetKind::Request
            } else {
                ForgetKind::NotARequest
            };
            let kept = keeper.values[index % keeper.values.len()];
            let Some((host, start)) = free_window(
                &hosts,
                &mut next_host,
                settings.window,
                &[value, kept],
                &mut rng,
            ) else {
                continue;
            };
            let planned = Planned {
                template,
                keeper,
                kind,
                value,
                kept,
                id: format!(
                    "{}-{}-{}-{}{}",
                    template.half.as_str(),
                    template.language.as_str(),
                    template.topic,
                    kind.as_str(),
                    index + 1
                ),
            };
            let window = &host.items[start..start + settings.window];
            let at = positions(settings.window, &mut rng);
            probes.push(build(&planned, host, window, &at, count_tokens));
        }
    }
    probes
}

/// One probe to build.
struct Planned<'a> {
    template: &'a ForgetTemplate,
    keeper: &'a Keeper,
    kind: ForgetKind,
    value: &'a str,
    kept: &'a str,
    id: String,
}

impl Planned<'_> {
    /// The user lines in order: statement, unrelated fact, second statement, last line.
    fn lines(&self) -> Vec<String> {
        let last = match self.kind {
            ForgetKind::Request => self.template.request,
            ForgetKind::NotARequest => self.template.not_a_request,
        };
        vec![
            self.template.statements[0].replace("{v}", self.value),
            self.keeper.statement.replace("{k}", self.kept),
            self.template.statements[1].replace("{v}", self.value),
            last.to_string(),
        ]
    }
}

/// Where the four lines go in a window of `len` items: the statement in the first fifth, the
/// unrelated fact before a third, the second statement before the middle, the last line in
/// the last third (ascending, each after the one before).
fn positions(len: usize, rng: &mut SeededRng) -> Vec<usize> {
    let spans = [(5, 20), (20, 33), (35, 55), (70, 90)];
    let mut at: Vec<usize> = Vec::with_capacity(spans.len());
    for (from, to) in spans {
        let (from, to) = (len * from / 100, len * to / 100);
        let drawn = from + rng.below((to - from).max(1));
        let after = at.last().map_or(0, |p| p + 1);
        at.push(drawn.max(after).min(len.saturating_sub(1)));
    }
    at
}

fn build(
    planned: &Planned<'_>,
    host: &Conversation,
    window: &[Item],
    at: &[usize],
    count_tokens: &dyn Fn(&str) -> usize,
) -> ForgetProbe {
    let lines = planned.lines();
    let language = planned.template.language;
    let (items, line_times) = interleave(host, window, &lines, at, LINE_LABEL, language);
    // Lines 0 and 2 state the detail (see `Planned::lines`).
    let statement_times = [0, 2]
        .iter()
        .filter_map(|&n| line_times.get(n).copied().flatten())
        .collect();
    let asked_at = items
        .last()
        .and_then(|i| i.time)
        .map(|t| Timestamp(t.0 + 1));
    let question = |n: usize, text: &str, answer: &str, gold: usize| Question {
        id: format!("{}/q{n}", planned.id),
        text: text.to_string(),
        answer: Some(answer.to_string()),
        gold: vec![format!("{LINE_LABEL}-{gold}")],
        category: planned.kind.as_str().to_string(),
        memory_type: None,
        after_item: items.len(),
        time: asked_at,
        choices: Vec::new(),
        correct_choice: None,
        as_of: None,
        metadata: Metadata::new(),
    };
    let questions = vec![
        question(0, planned.template.question, planned.value, 0),
        question(1, planned.keeper.question, planned.kept, 1),
    ];
    let tokens: usize = items.iter().map(|i| count_tokens(&i.text)).sum();
    let asks = (0..questions.len())
        .map(|question| Ask {
            question,
            after_item: items.len(),
            history_tokens: tokens,
            final_ask: true,
            checkpoint: None,
        })
        .collect();
    let stream = PreparedConversation {
        real_items: items.len(),
        conversation: Conversation {
            id: format!("forget-{}", planned.id),
            items,
            questions,
        },
        asks,
        noise_items: 0,
        tokens,
        contaminated: Vec::new(),
    };
    ForgetProbe {
        id: planned.id.clone(),
        half: planned.template.half,
        language,
        topic: planned.template.topic.to_string(),
        kind: planned.kind,
        host: host.id.clone(),
        value: planned.value.to_string(),
        kept_value: planned.kept.to_string(),
        last_line: lines[3].clone(),
        lines,
        question: planned.template.question.to_string(),
        kept_question: planned.keeper.question.to_string(),
        search: planned.template.search.to_string(),
        statement_times,
        stream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::Role;

    fn host(id: &str, n: usize) -> Conversation {
        let items = (0..n)
            .map(|i| Item {
                label: format!("{id}-{i}"),
                role: if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                speaker: Some(if i % 2 == 0 { "Ann" } else { "Bob" }.into()),
                text: format!("host line {i} about the weather"),
                time: Some(Timestamp(1_700_000_000_000 + i as i64 * 60_000)),
                session: "s1".into(),
                metadata: Metadata::new(),
            })
            .collect();
        Conversation {
            id: id.into(),
            items,
            questions: Vec::new(),
        }
    }

    fn probes(half: Half, language: ProbeLanguage) -> Vec<ForgetProbe> {
        let hosts = vec![host("h1", 200), host("h2", 200)];
        let settings = ProbeSettings {
            half,
            language,
            hosts: &hosts,
            seed: 7,
            window: 60,
        };
        forget_probes(&settings, &|t: &str| t.split_whitespace().count())
    }

    #[test]
    fn every_topic_gives_three_requests_and_one_line_that_is_not() {
        for half in [Half::Tuning, Half::Test] {
            for language in [ProbeLanguage::En, ProbeLanguage::Zh] {
                let made = probes(half, language);
                let topics = TEMPLATES
                    .iter()
                    .filter(|t| t.half == half && t.language == language)
                    .count();
                assert!(topics >= 8, "{half:?} {language:?}");
                assert_eq!(made.len(), 4 * topics, "{half:?} {language:?}");
                let requests = made
                    .iter()
                    .filter(|p| p.kind == ForgetKind::Request)
                    .count();
                assert_eq!(requests, 3 * topics);
            }
        }
    }

    #[test]
    fn lines_come_in_order_and_the_questions_follow_the_window() {
        for probe in probes(Half::Test, ProbeLanguage::Zh) {
            let items = &probe.stream.conversation.items;
            let at: Vec<usize> = (0..4)
                .map(|n| {
                    let label = format!("{LINE_LABEL}-{n}");
                    items.iter().position(|i| i.label == label).unwrap()
                })
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{}", probe.id);
            assert_eq!(items[at[3]].text, probe.last_line);
            assert!(items[at[0]].text.contains(&probe.value));
            assert!(items[at[1]].text.contains(&probe.kept_value));
            assert_eq!(probe.stream.asks.len(), 2);
            assert!(probe
                .stream
                .asks
                .iter()
                .all(|a| a.after_item == items.len()));
        }
    }

    #[test]
    fn the_halves_share_no_phrasing_and_no_value() {
        let texts = |half: Half| -> Vec<String> {
            TEMPLATES
                .iter()
                .filter(|t| t.half == half)
                .flat_map(|t| {
                    let mut texts: Vec<String> =
                        t.statements.iter().map(|s| s.to_string()).collect();
                    texts.extend([t.request, t.not_a_request, t.question].map(String::from));
                    texts.extend(t.values.iter().map(|v| v.to_string()));
                    texts
                })
                .chain(
                    KEEPERS
                        .iter()
                        .filter(|k| k.half == half)
                        .flat_map(|k| k.values.iter().map(|v| v.to_string())),
                )
                .collect()
        };
        let tuning = texts(Half::Tuning);
        for text in texts(Half::Test) {
            assert!(!tuning.contains(&text), "{text}");
        }
    }
}
