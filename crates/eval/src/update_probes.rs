//! Knowledge-update probes: plant a fact, later change it (or repeat it, correct it, negate it,
//! or say something that must not change it), then ask.
//!
//! Neither LoCoMo nor ZH-4O tests updates, so the probes are generated here from templates
//! written for this purpose (English and Chinese, never translations of a user's text): fifteen
//! slots — residence, employer, job, relationship status, partner, a child's name, a pet's
//! name, a favourite, diet, a plan's destination, a number, an appointment's date, a project's
//! status, a company's CEO and its headquarters — each with several phrasings of every line a
//! probe needs and its own values ([`templates`]). The templates come in two halves that share
//! no phrasing and no value ([`Half`]): the engine's rules may be tuned on one, and reports are
//! made on the other.
//!
//! Every template gives one probe of each [`ProbeKind`] it has lines for: one to three
//! updates, a correction, a negation, a repeat, a question about the past (`as_of`), and three
//! distractors that must not replace the fact (another person's value, a hypothetical, a quoted
//! statement). A probe's lines are user messages inserted into a window of a host conversation
//! (LoCoMo for English, a ZH-4O dialogue for Chinese), each followed by the other speaker's
//! short acknowledgment: the first statement early in the window, the rest spread after it (a
//! correction right after what it corrects), and the question asked after the window. No value
//! of a probe appears in its window, so a value in the context comes from the probe.

pub mod templates;
mod test;
mod tuning;

use mnemos_core::{Metadata, Role, Timestamp};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, Item, Question};
use crate::protocol::{Ask, PreparedConversation, SeededRng};
use crate::scoring::answer_in_context;

use templates::Template;
pub use templates::{Half, ProbeLanguage, UpdateSlot};

/// What a probe tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// A fact, then one to three updates: the last value is current.
    Update,
    /// A fact, then a correction of it right away.
    Correction,
    /// A fact, then a statement that it no longer holds.
    Negation,
    /// A fact said twice: one memory, reinforced.
    Repeat,
    /// A fact and its update, then a question about the time before the update (`as_of`).
    AsOf,
    /// A fact, then another person's value for the same slot: the fact stays.
    OtherPerson,
    /// A fact, then a hypothetical value: the fact stays.
    Hypothetical,
    /// A fact, then someone else's quoted statement of a value: the fact stays.
    Quoted,
}

impl ProbeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Update => "update",
            ProbeKind::Correction => "correction",
            ProbeKind::Negation => "negation",
            ProbeKind::Repeat => "repeat",
            ProbeKind::AsOf => "as_of",
            ProbeKind::OtherPerson => "other_person",
            ProbeKind::Hypothetical => "hypothetical",
            ProbeKind::Quoted => "quoted",
        }
    }

    /// A line that must not replace the fact.
    pub fn is_distractor(self) -> bool {
        matches!(
            self,
            ProbeKind::OtherPerson | ProbeKind::Hypothetical | ProbeKind::Quoted
        )
    }

    /// A probe whose later line replaces or ends the fact.
    pub fn changes_the_fact(self) -> bool {
        matches!(
            self,
            ProbeKind::Update | ProbeKind::Correction | ProbeKind::Negation
        )
    }
}

/// Item labels of a probe's inserted messages: `update-probe-<n>` for the n-th line (0 is the
/// first statement), `-ack` after it for the acknowledgment.
pub const LINE_LABEL: &str = "update-probe";

/// One generated probe, ready to stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateProbe {
    /// `test-en-residence-update2`: half, language, slot, kind (and updates).
    pub id: String,
    pub half: Half,
    pub language: ProbeLanguage,
    pub slot: UpdateSlot,
    pub kind: ProbeKind,
    /// Updates in the chain (for `Update`: 1 to 3).
    pub updates: usize,
    /// The host conversation's id.
    pub host: String,
    /// The value the context must hold: the current one, or for `AsOf` the one valid then.
    pub expected: String,
    /// Values that must not be presented as current (earlier values of the chain, a corrected
    /// value, a negated one). Empty for distractors and `AsOf`.
    pub stale: Vec<String>,
    /// A distractor's value.
    pub distractor: Option<String>,
    /// The inserted user lines, in order (the first is the statement).
    pub lines: Vec<String>,
    pub question: String,
    pub as_of: Option<Timestamp>,
    /// The stream: a window of the host with the lines inserted, and the question asked after it.
    pub stream: PreparedConversation,
}

impl UpdateProbe {
    /// The first statement of the fact.
    pub fn statement(&self) -> &str {
        self.lines.first().map_or("", String::as_str)
    }

    /// The line that negates the fact (`Negation` only).
    pub fn negation(&self) -> Option<&str> {
        (self.kind == ProbeKind::Negation)
            .then(|| self.lines.last().map(String::as_str))
            .flatten()
    }
}

/// Every template of `half` in `language`.
fn templates(half: Half, language: ProbeLanguage) -> impl Iterator<Item = &'static Template> {
    tuning::TEMPLATES
        .iter()
        .chain(test::TEMPLATES)
        .filter(move |t| t.half == half && t.language == language)
}

/// One probe to build: its kind, the template lines it uses and the values of its chain.
struct Plan {
    kind: ProbeKind,
    /// Which first statement (index into `statements`).
    statement: usize,
    /// Indices into `values`: the chain (first value first).
    values: Vec<usize>,
}

/// The probes a template gives: updates of one to three steps, a correction, a negation, a
/// repeat, a question about the past and the three distractors (where the template has the
/// lines). Chains take consecutive values from different offsets, so they never repeat a value.
fn plans(template: &Template) -> Vec<Plan> {
    let n = template.values.len();
    let chain =
        |start: usize, len: usize| -> Vec<usize> { (0..len).map(|i| (start + i) % n).collect() };
    let mut plans = vec![
        Plan {
            kind: ProbeKind::Update,
            statement: 0,
            values: chain(0, 2),
        },
        Plan {
            kind: ProbeKind::Update,
            statement: 1,
            values: chain(2, 2),
        },
        Plan {
            kind: ProbeKind::Update,
            statement: 0,
            values: chain(1, 3),
        },
        Plan {
            kind: ProbeKind::Update,
            statement: 1,
            values: chain(3, 4.min(n)),
        },
        Plan {
            kind: ProbeKind::Correction,
            statement: 0,
            values: chain(4, 2),
        },
        Plan {
            kind: ProbeKind::Repeat,
            statement: 1,
            values: chain(5, 1),
        },
        Plan {
            kind: ProbeKind::AsOf,
            statement: 0,
            values: chain(2, 2),
        },
        Plan {
            kind: ProbeKind::OtherPerson,
            statement: 1,
            values: chain(0, 2),
        },
        Plan {
            kind: ProbeKind::Hypothetical,
            statement: 0,
            values: chain(3, 2),
        },
    ];
    if template.negation.is_some() {
        plans.push(Plan {
            kind: ProbeKind::Negation,
            statement: 1,
            values: chain(1, 1),
        });
    }
    if template.quoted.is_some() {
        plans.push(Plan {
            kind: ProbeKind::Quoted,
            statement: 1,
            values: chain(4, 2),
        });
    }
    plans
}

/// The user lines of a plan, in order, and the probe's expectations.
struct Lines {
    texts: Vec<String>,
    expected: String,
    stale: Vec<String>,
    distractor: Option<String>,
    question: String,
}

fn lines(template: &Template, plan: &Plan) -> Lines {
    let value = |i: usize| template.values[plan.values[i] % template.values.len()].to_string();
    let fill = |pattern: &str, v: &str| pattern.replace("{v}", v);
    let first = value(0);
    let statement = fill(
        template.statements[plan.statement % template.statements.len()],
        &first,
    );
    let mut texts = vec![statement];
    let mut expected = first.clone();
    let mut stale = Vec::new();
    let mut distractor = None;
    let mut question = template.question.to_string();
    match plan.kind {
        ProbeKind::Update | ProbeKind::AsOf => {
            for step in 1..plan.values.len() {
                let update = template.updates[(step - 1) % template.updates.len()];
                texts.push(fill(update, &value(step)));
            }
            if plan.kind == ProbeKind::Update {
                expected = value(plan.values.len() - 1);
                stale = (0..plan.values.len() - 1).map(value).collect();
            } else {
                question = template.past_question.to_string();
            }
        }
        ProbeKind::Correction => {
            texts.push(
                template
                    .correction
                    .replace("{v}", &value(1))
                    .replace("{old}", &first),
            );
            expected = value(1);
            stale = vec![first.clone()];
        }
        ProbeKind::Negation => {
            texts.push(fill(template.negation.unwrap_or_default(), &first));
            stale = vec![first.clone()];
            question = fill(template.still_question, &first);
        }
        ProbeKind::Repeat => texts.push(fill(template.repeat, &first)),
        ProbeKind::OtherPerson | ProbeKind::Hypothetical | ProbeKind::Quoted => {
            let pattern = match plan.kind {
                ProbeKind::OtherPerson => template.other_person,
                ProbeKind::Hypothetical => template.hypothetical,
                _ => template.quoted.unwrap_or_default(),
            };
            texts.push(fill(pattern, &value(1)));
            distractor = Some(value(1));
        }
    }
    Lines {
        texts,
        expected,
        stale,
        distractor,
        question,
    }
}

/// How the probes of one language are made.
pub struct ProbeSettings<'a> {
    pub half: Half,
    pub language: ProbeLanguage,
    pub hosts: &'a [Conversation],
    pub seed: u64,
    /// Host items per probe (the window the lines go into).
    pub window: usize,
}

/// Generate every probe of `settings.half` in `settings.language`, each in a window of a host
/// (round robin, positions from the seed) that holds none of its values. Hosts shorter than
/// the window are not used.
pub fn update_probes(
    settings: &ProbeSettings<'_>,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Vec<UpdateProbe> {
    let hosts: Vec<&Conversation> = settings
        .hosts
        .iter()
        .filter(|h| h.items.len() >= settings.window.max(12))
        .collect();
    if hosts.is_empty() {
        return Vec::new();
    }
    let mut rng = SeededRng::new(settings.seed);
    let mut next_host = 0usize;
    let mut probes = Vec::new();
    for template in templates(settings.half, settings.language) {
        for plan in plans(template) {
            let lines = lines(template, &plan);
            let values: Vec<&str> = lines
                .stale
                .iter()
                .chain(std::iter::once(&lines.expected))
                .chain(&lines.distractor)
                .map(String::as_str)
                .collect();
            let Some((host, start)) =
                free_window(&hosts, &mut next_host, settings.window, &values, &mut rng)
            else {
                continue;
            };
            let updates = if plan.kind == ProbeKind::Update {
                plan.values.len() - 1
            } else {
                0
            };
            let id = format!(
                "{}-{}-{}-{}{}",
                template.half.as_str(),
                template.language.as_str(),
                template.slot.as_str(),
                plan.kind.as_str(),
                if updates > 0 {
                    updates.to_string()
                } else {
                    String::new()
                }
            );
            let window = &host.items[start..start + settings.window];
            let placed = Placement::draw(settings.window, plan.kind, lines.texts.len(), &mut rng);
            probes.push(build(
                template,
                &plan,
                lines,
                id,
                host,
                window,
                &placed,
                count_tokens,
                updates,
            ));
        }
    }
    probes
}

/// A host and the start of a window in it whose text holds none of `values`, trying hosts
/// round robin from `next` and a few seeded starts in each.
pub(crate) fn free_window<'h>(
    hosts: &[&'h Conversation],
    next: &mut usize,
    window: usize,
    values: &[&str],
    rng: &mut SeededRng,
) -> Option<(&'h Conversation, usize)> {
    const TRIES_PER_HOST: usize = 6;
    for k in 0..hosts.len() {
        let host = hosts[(*next + k) % hosts.len()];
        let room = host.items.len() - window + 1;
        for _ in 0..TRIES_PER_HOST {
            let start = rng.below(room);
            let text: Vec<&str> = host.items[start..start + window]
                .iter()
                .map(|i| i.text.as_str())
                .collect();
            let text = text.join("\n");
            if values.iter().all(|v| !answer_in_context(v, &text)) {
                *next = (*next + k + 1) % hosts.len();
                return Some((host, start));
            }
        }
    }
    None
}

/// Where a probe's lines go, as positions in its window (ascending).
struct Placement {
    at: Vec<usize>,
}

impl Placement {
    /// The first statement in the window's first fifth; a correction two items after what it
    /// corrects; other lines spread evenly over the window's middle (35% to 85%).
    fn draw(len: usize, kind: ProbeKind, lines: usize, rng: &mut SeededRng) -> Placement {
        let within =
            |rng: &mut SeededRng, from: usize, to: usize| from + rng.below((to - from).max(1));
        let first = within(rng, len / 20, len / 5);
        let mut at = vec![first];
        if kind == ProbeKind::Correction {
            at.push((first + 2).min(len - 1));
            return Placement { at };
        }
        let rest = lines.saturating_sub(1);
        let (from, to) = (len * 35 / 100, len * 85 / 100);
        let span = (to - from) / rest.max(1);
        for i in 0..rest {
            let start = from + i * span;
            at.push(within(rng, start, start + span.max(1)).max(first + 1));
        }
        // Lines may share a position (they go in order before the same host item).
        at.iter_mut().for_each(|p| *p = (*p).min(len - 1));
        at.sort_unstable();
        Placement { at }
    }
}

/// Synthetic times for a window whose items have none (ZH-4O): one message an hour from the
/// first of March 2024, so that valid time orders them and `as_of` can fall between.
const SYNTHETIC_START: i64 = 1_709_280_000_000;
const HOUR: i64 = 3_600_000;

#[allow(clippy::too_many_arguments)]
fn build(
    template: &Template,
    plan: &Plan,
    lines: Lines,
    id: String,
    host: &Conversation,
    window: &[Item],
    placed: &Placement,
    count_tokens: &dyn Fn(&str) -> usize,
    updates: usize,
) -> UpdateProbe {
    let (items, line_times) = interleave(
        host,
        window,
        &lines.texts,
        &placed.at,
        LINE_LABEL,
        template.language,
    );
    let as_of = (plan.kind == ProbeKind::AsOf)
        .then(|| {
            match (
                line_times.first().copied().flatten(),
                line_times.get(1).copied().flatten(),
            ) {
                (Some(a), Some(b)) => Some(Timestamp(a.0 + (b.0 - a.0) / 2)),
                _ => None,
            }
        })
        .flatten();
    let question_text = match as_of {
        Some(at) => lines.question.replace("{when}", &template.language.day(at)),
        None => lines.question.clone(),
    };
    let gold = match plan.kind {
        ProbeKind::Update | ProbeKind::Correction | ProbeKind::Negation => lines.texts.len() - 1,
        _ => 0,
    };
    let asked_at = items.last().and_then(|i| i.time);
    let question = Question {
        id: format!("{id}/q"),
        text: question_text.clone(),
        answer: Some(lines.expected.clone()),
        gold: vec![format!("{LINE_LABEL}-{gold}")],
        category: plan.kind.as_str().to_string(),
        memory_type: None,
        after_item: items.len(),
        time: asked_at.map(|t| Timestamp(t.0 + 1)),
        choices: Vec::new(),
        correct_choice: None,
        as_of,
        metadata: Metadata::new(),
    };
    let tokens: usize = items.iter().map(|i| count_tokens(&i.text)).sum();
    let ask = Ask {
        question: 0,
        after_item: items.len(),
        history_tokens: tokens,
        final_ask: true,
        checkpoint: None,
    };
    let stream = PreparedConversation {
        real_items: items.len(),
        conversation: Conversation {
            id: format!("update-{id}"),
            items,
            questions: vec![question],
        },
        asks: vec![ask],
        noise_items: 0,
        tokens,
        contaminated: Vec::new(),
    };
    UpdateProbe {
        id,
        half: template.half,
        language: template.language,
        slot: template.slot,
        kind: plan.kind,
        updates,
        host: host.id.clone(),
        expected: lines.expected,
        stale: lines.stale,
        distractor: lines.distractor,
        lines: lines.texts,
        question: question_text,
        as_of,
        stream,
    }
}

/// A host window with a probe's user lines inserted before the items at their positions (`at`,
/// ascending; lines may share one), each followed by the other speaker's acknowledgment and
/// labelled `<label>-<n>` / `<label>-<n>-ack`. A window without times gets one message an hour
/// from [`SYNTHETIC_START`], so valid time orders it. Returns the items and each line's time.
pub(crate) fn interleave(
    host: &Conversation,
    window: &[Item],
    lines: &[String],
    at: &[usize],
    label: &str,
    language: ProbeLanguage,
) -> (Vec<Item>, Vec<Option<Timestamp>>) {
    let synthetic = window.iter().any(|i| i.time.is_none());
    let (user, other) = speakers(host);
    let mut items = Vec::with_capacity(window.len() + 2 * lines.len());
    let mut line_times = Vec::with_capacity(lines.len());
    for (position, item) in window.iter().enumerate() {
        let mut item = item.clone();
        if synthetic {
            item.time = Some(Timestamp(SYNTHETIC_START + position as i64 * HOUR));
        }
        while line_times.len() < lines.len() && at.get(line_times.len()) == Some(&position) {
            let n = line_times.len();
            let inserted = inserted_item(
                &format!("{label}-{n}"),
                Role::User,
                &user,
                &lines[n],
                &item,
                2,
            );
            line_times.push(inserted.time);
            items.push(inserted);
            let ack = language.acknowledgment();
            let reply = format!("{label}-{n}-ack");
            items.push(inserted_item(
                &reply,
                Role::Assistant,
                &other,
                ack,
                &item,
                1,
            ));
        }
        items.push(item);
    }
    (items, line_times)
}

/// The names the host gives its user and its other speaker (the first named item of each role).
fn speakers(host: &Conversation) -> (Option<String>, Option<String>) {
    let named = |role: Role| {
        host.items
            .iter()
            .find(|i| i.role == role && i.speaker.is_some())
            .and_then(|i| i.speaker.clone())
    };
    (named(Role::User), named(Role::Assistant))
}

/// A message inserted before `next`, in its session and just before its time (`before` ms).
fn inserted_item(
    label: &str,
    role: Role,
    speaker: &Option<String>,
    text: &str,
    next: &Item,
    before: i64,
) -> Item {
    Item {
        label: label.to_string(),
        role,
        speaker: speaker.clone(),
        text: text.to_string(),
        time: next.time.map(|t| Timestamp(t.0.saturating_sub(before))),
        session: next.session.clone(),
        metadata: Metadata::new(),
    }
}

#[cfg(test)]
mod tests;
