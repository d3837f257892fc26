//! Persona Construction Branch (MOOM §3.2, Appendix B): a persona sketch kept up to date from
//! periodic snapshots, merged key by key according to each key's kind.
//!
//! - **Snapshot.** Every `persona_every` rounds, the memory model's `persona_snapshot` reads the
//!   window of rounds since the last snapshot and returns values for the schema's keys.
//! - **Whose.** A role-play window has two speakers who both say things about themselves, so
//!   the sketch is kept per subject: the speaker of the line a value came from (the window's
//!   user when the model does not say which line). Values merge only with values of the same
//!   subject and key; the user's name never replaces the character's.
//! - **Sketch.** One `MemoryKind::Persona { key }` memory per value, its text a statement about
//!   its subject in the value's language ("赵齐喜欢坦克", "Ann works as a nurse"; custom keys
//!   read "Ann's favourite_tea: 龙井"), its metadata the bare value (`moom.value`), the subject
//!   (`moom.subject`) and the round it was said (`moom.round`), its provenance the line it came
//!   from (or the whole window when the model does not say).
//!   Replaced, aged-out and contradicted values are forgotten with the reason, so each key's
//!   history stays in the store (`mnemos show persona`).
//! - **Merging by kind:**
//!   - `replace`: a different value replaces the current one.
//!   - `append`: a value is added unless the key already holds it (same text, or an embedding
//!     cosine ≥ `dedup_similarity`).
//!   - `trajectory`: values are added with their round; their age is shown relative to the
//!     current round; beyond `trajectory_keep` values the oldest ages out.
//!   - `contradictory`: added as `append`; then every value of the opposite key whose cosine
//!     with the new one is ≥ `contradiction_similarity` is outdated and removed ("likes: cats"
//!     goes when "dislikes: cats" arrives).
//!   - `complex`: one value per key, the old and new merged by the model's `merge` task.

use std::collections::HashMap;

use mnemos_core::memory_model::{KeyKind, Line, PersonaKey, PersonaSchema, PersonaValue};
use mnemos_core::KindTag;
use mnemos_core::{
    BatchForget, Embedder, ForgetCause, Job, Memory, MemoryKind, MemoryModelExt, Metadata, TurnId,
};

use super::nsb::turns_in_rounds;
use crate::primitives::{derived_memory, turn_line};
use mnemos_engine::mechanism::{Derived, JobSpec, MechanismCtx};
use mnemos_engine::EngineResult;

pub const JOB_PERSONA: &str = "persona";
/// Metadata keys of a persona value: the bare value and the round it was said.
pub const VALUE_KEY: &str = "moom.value";
pub const SAID_ROUND_KEY: &str = "moom.round";
/// Metadata key of a persona value: whom it is about (a speaker's display name).
pub const SUBJECT_KEY: &str = "moom.subject";

/// Payload of a `persona` job: the window of rounds `from..=to`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct PersonaPayload {
    pub from_round: u64,
    pub to_round: u64,
}

/// How values merge.
#[derive(Clone, Debug)]
pub struct MergeRules {
    pub schema: PersonaSchema,
    pub dedup_similarity: f64,
    pub contradiction_similarity: f64,
    pub trajectory_keep: usize,
    /// Use embeddings for deduplication and contradictions (MOOM's embedding-based merging).
    pub embedding_merge: bool,
    /// Use the model's `merge` for complex keys; otherwise they append (MOOM's LLM-based merging).
    pub model_merge: bool,
}

/// The key a persona memory belongs to.
pub fn key_of(memory: &Memory) -> Option<&str> {
    match &memory.kind {
        MemoryKind::Persona { key } => Some(key),
        _ => None,
    }
}

/// The bare value of a persona memory.
pub fn value_of(memory: &Memory) -> &str {
    memory
        .metadata
        .get(VALUE_KEY)
        .map_or(memory.text.as_str(), String::as_str)
}

/// Whom a persona value is about, when known.
pub fn subject_of(memory: &Memory) -> Option<&str> {
    memory.metadata.get(SUBJECT_KEY).map(String::as_str)
}

/// The round a persona value was said.
pub fn said_round(memory: &Memory) -> u64 {
    memory
        .metadata
        .get(SAID_ROUND_KEY)
        .and_then(|r| r.parse().ok())
        .unwrap_or(memory.created.round)
}

/// The key's name in the value's language: a default key keeps its English name for an
/// English value and takes its Chinese twin's for a Chinese one (and the reverse), so the
/// sketch reads in the user's language whichever default set is configured. Custom keys keep
/// their own name.
pub fn label_for(key: &str, value: &str) -> String {
    let target = if mnemos_text::has_cjk(value) {
        PersonaSchema::default_keys_zh()
    } else {
        PersonaSchema::default_keys()
    };
    default_key_index(key)
        .and_then(|i| target.keys.get(i))
        .map_or_else(|| key.to_string(), |k| k.name.clone())
}

/// A default key's position in the default sets (the English and Chinese sets list the same
/// keys in the same order); `None` for a custom key.
fn default_key_index(key: &str) -> Option<usize> {
    let position = |schema: PersonaSchema| schema.keys.iter().position(|k| k.name == key);
    position(PersonaSchema::default_keys()).or_else(|| position(PersonaSchema::default_keys_zh()))
}

/// `key: value`, with a full-width colon for a Chinese key.
pub fn render_value(key: &str, value: &str) -> String {
    if key.chars().any(mnemos_text::is_cjk) {
        format!("{key}：{value}")
    } else {
        format!("{key}: {value}")
    }
}

/// A value as a statement about its subject, in the value's language: "赵齐喜欢坦克",
/// "Ann works as a nurse". Default keys (English or Chinese) read as sentences; custom keys as
/// "Ann's favourite_tea: 龙井" / "赵齐的口头禅：好家伙". Without a subject: `key: value`.
pub fn render_statement(subject: Option<&str>, key: &str, value: &str) -> String {
    let label = label_for(key, value);
    let Some(s) = subject.map(str::trim).filter(|s| !s.is_empty()) else {
        return render_value(&label, value);
    };
    let v = value.trim();
    // The English name says what the key is about, whichever default set it comes from.
    let en = PersonaSchema::default_keys();
    let concept = default_key_index(key)
        .and_then(|i| en.keys.get(i))
        .map(|k| k.name.as_str());
    if mnemos_text::has_cjk(v) {
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| v.starts_with(p));
        match concept {
            Some("name") => format!("{s}的名字是{v}"),
            Some("age") if v.ends_with('岁') => format!("{s}{v}"),
            Some("age") => format!("{s}的年龄是{v}"),
            Some("gender") => format!("{s}是{v}"),
            Some("job") if starts(&["以前", "曾"]) => format!("{s}{v}"),
            Some("job") => format!("{s}是{v}"),
            Some("workplace") => format!("{s}在{v}工作或学习"),
            Some("location") if starts(&["以前", "在", "曾"]) => format!("{s}{v}"),
            Some("location") => format!("{s}住在{v}"),
            Some("family")
                if v.starts_with(|c: char| c.is_ascii_digit() || "一两二三四五".contains(c)) =>
            {
                format!("{s}有{v}")
            }
            Some("family") => format!("{s}的{v}"),
            Some("pets") => format!("{s}养了{v}"),
            Some("likes") if starts(&["最喜欢", "喜欢", "爱"]) => format!("{s}{v}"),
            Some("likes") => format!("{s}喜欢{v}"),
            Some("dislikes") => format!("{s}不喜欢{v}"),
            Some("habits") => format!("{s}{v}"),
            Some("plans")
                if ["想", "要", "打算", "准备", "计划"]
                    .iter()
                    .any(|w| v.contains(w)) =>
            {
                format!("{s}{v}")
            }
            Some("plans") => format!("{s}打算{v}"),
            Some("relationships")
                if v.ends_with(|c: char| c.is_alphanumeric()) && v.contains('的') =>
            {
                format!("{s}是{v}")
            }
            Some("personality") => format!("{s}性格{v}"),
            _ => format!("{s}的{label}：{v}"),
        }
    } else {
        let article = if v.starts_with(['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']) {
            "an"
        } else {
            "a"
        };
        let former = v.strip_prefix("formerly ");
        match (concept, former) {
            (Some("name"), _) => format!("{s}'s name is {v}"),
            (Some("age" | "gender" | "personality"), _) => format!("{s} is {v}"),
            (Some("job"), Some(rest)) => format!("{s} formerly worked as {rest}"),
            (Some("job"), None) => format!("{s} works as {article} {v}"),
            (Some("workplace"), _) => format!("{s} works or studies at {v}"),
            (Some("location"), Some(rest)) => format!("{s} formerly lived in {rest}"),
            (Some("location"), None) => format!("{s} lives in {v}"),
            (Some("family"), _) => format!("{s}'s {v}"),
            (Some("pets"), _) => format!("{s} has {v}"),
            (Some("likes"), _) => format!("{s} likes {v}"),
            (Some("dislikes"), _) => format!("{s} dislikes {v}"),
            (Some("plans"), _) if v.starts_with("to ") => format!("{s} plans {v}"),
            (Some("plans"), _) => format!("{s} plans to {v}"),
            _ => format!("{s}'s {label}: {v}"),
        }
    }
}

fn normalized(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Embeddings of texts, cached for one merge.
struct Vectors<'e> {
    embedder: &'e dyn Embedder,
    cache: HashMap<String, Vec<f32>>,
}

impl Vectors<'_> {
    fn similarity(&mut self, a: &str, b: &str) -> EngineResult<f64> {
        if normalized(a) == normalized(b) {
            return Ok(1.0);
        }
        for text in [a, b] {
            if !self.cache.contains_key(text) {
                let v = self
                    .embedder
                    .embed_batch(&[text])
                    .map_err(mnemos_core::Error::from)?
                    .pop()
                    .unwrap_or_default();
                self.cache.insert(text.to_string(), v);
            }
        }
        Ok(match (self.cache.get(a), self.cache.get(b)) {
            (Some(x), Some(y)) => mnemos_core::embed::cosine(x, y),
            _ => 0.0,
        })
    }
}

/// Take a snapshot of the window and merge it into the sketch.
pub fn snapshot_and_merge(
    ctx: &MechanismCtx,
    job: &Job,
    rules: &MergeRules,
) -> EngineResult<Derived> {
    let payload: PersonaPayload = JobSpec::parse(job)?;
    let mut derived = Derived::default();
    let memories = turns_in_rounds(ctx, payload.from_round, payload.to_round)?;
    if memories.is_empty() {
        return Ok(derived);
    }
    // The turns themselves carry the roles the snapshot needs (whose line is it?).
    let ids: Vec<TurnId> = memories
        .iter()
        .filter_map(|m| m.provenance.first().copied())
        .collect();
    let turns = ctx.turns(&ids)?;
    let lines: Vec<Line> = turns.iter().map(turn_line).collect();
    let values = ctx.model.persona_snapshot(&lines, &rules.schema)?;
    let window: Vec<TurnId> = turns.iter().map(|t| t.id).collect();
    // A value the model does not place on a line is about the window's user.
    let user = turns
        .iter()
        .find(|t| t.role == mnemos_core::Role::User)
        .and_then(|t| t.speaker.clone());
    let sketch = ctx.active_of(&[KindTag::Persona])?;
    merge(
        ctx,
        job,
        rules,
        sketch,
        values,
        |line| match line.and_then(|i| turns.get(i)) {
            Some(turn) => Source {
                turns: vec![turn.id],
                round: turn.at.round,
                subject: turn.speaker.clone().or_else(|| user.clone()),
            },
            None => Source {
                turns: window.clone(),
                round: payload.to_round,
                subject: user.clone(),
            },
        },
        &mut derived,
    )?;
    Ok(derived)
}

/// Where a snapshot value came from.
struct Source {
    /// The turns it came from.
    turns: Vec<TurnId>,
    /// The round it was said in (the window's end when unknown).
    round: u64,
    /// Whom it is about.
    subject: Option<String>,
}

/// Merge snapshot `values` into `sketch` (the active persona memories), by key kind, each
/// subject's values apart.
fn merge(
    ctx: &MechanismCtx,
    job: &Job,
    rules: &MergeRules,
    sketch: Vec<Memory>,
    values: Vec<PersonaValue>,
    source: impl Fn(Option<usize>) -> Source,
    derived: &mut Derived,
) -> EngineResult<()> {
    let mut merger = Merger {
        ctx,
        job,
        rules,
        sketch,
        vectors: Vectors {
            embedder: ctx.embedder(),
            cache: HashMap::new(),
        },
        derived,
    };
    // Complex keys gather all their new values (per subject) into one merge.
    let mut complex: Vec<ComplexValues> = Vec::new();
    for value in values {
        let Some(key) = rules.schema.key(&value.key).cloned() else {
            continue;
        };
        let text = value.value.trim().to_string();
        if text.is_empty() {
            continue;
        }
        let source = source(value.line);
        match key.kind {
            KeyKind::Replace => merger.replace(&key, &text, source),
            KeyKind::Append | KeyKind::Contradictory | KeyKind::Trajectory => {
                merger.expand(&key, &text, source)?
            }
            KeyKind::Complex => gather_complex(&mut complex, key, text, source),
        }
    }
    for values in complex {
        merger.merge_complex(values)?;
    }
    Ok(())
}

/// Add a complex key's new value to the values gathered for its key and subject.
fn gather_complex(complex: &mut Vec<ComplexValues>, key: PersonaKey, text: String, source: Source) {
    let Source {
        turns: sources,
        round,
        subject,
    } = source;
    match complex
        .iter_mut()
        .find(|c| c.key.name == key.name && c.subject == subject)
    {
        Some(pending) => {
            if !pending.texts.contains(&text) {
                pending.texts.push(text);
            }
            pending.sources.extend(sources);
            pending.round = pending.round.max(round);
        }
        None => complex.push(ComplexValues {
            key,
            texts: vec![text],
            sources,
            round,
            subject,
        }),
    }
}

/// One snapshot's merge into the sketch: the sketch as it changes, and the writes it causes.
struct Merger<'a, 'c> {
    ctx: &'a MechanismCtx<'c>,
    job: &'a Job,
    rules: &'a MergeRules,
    sketch: Vec<Memory>,
    vectors: Vectors<'c>,
    derived: &'a mut Derived,
}

impl Merger<'_, '_> {
    /// Positions in the sketch of the values of `key` about `subject`.
    fn held(&self, key: &str, subject: Option<&str>) -> Vec<usize> {
        (0..self.sketch.len())
            .filter(|i| holds(&self.sketch[*i], key, subject))
            .collect()
    }

    fn add(&mut self, new: Memory) {
        self.sketch.push(new.clone());
        self.derived.memories.push(new);
    }

    /// Take the value at `i` out of the sketch and forget it with `reason`.
    fn drop_at(&mut self, i: usize, reason: impl FnOnce(&Memory) -> String) {
        let old = self.sketch.remove(i);
        let reason = reason(&old);
        drop_value(&old, reason, self.job, self.derived);
    }

    /// A replace key: the new value replaces every held one (unless it is one of them).
    fn replace(&mut self, key: &PersonaKey, text: &str, source: Source) {
        let subject = source.subject.as_deref();
        let held = self.held(&key.name, subject);
        if held
            .iter()
            .any(|i| normalized(value_of(&self.sketch[*i])) == normalized(text))
        {
            return;
        }
        let round = source.round;
        let new = persona_memory(self.job, key, text, source.turns.clone(), round, subject);
        for i in held.into_iter().rev() {
            self.drop_at(i, |old| {
                format!(
                    "moom: '{}' replaced by '{text}' at round {round}",
                    value_of(old)
                )
            });
        }
        self.add(new);
    }

    /// Is `text` already held, by embedding similarity or (for trajectories, or without
    /// embedding merge) by normalized text?
    fn duplicates(&mut self, key: &PersonaKey, held: &[usize], text: &str) -> EngineResult<bool> {
        for i in held {
            let old = value_of(&self.sketch[*i]).to_string();
            let same = if self.rules.embedding_merge && key.kind != KeyKind::Trajectory {
                self.vectors.similarity(&old, text)? >= self.rules.dedup_similarity
            } else {
                normalized(&old) == normalized(text)
            };
            if same {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// An append, contradictory or trajectory key: the new value joins the held ones unless
    /// it repeats one; a contradictory key drops close values of its opposite, a trajectory
    /// keeps only its newest values.
    fn expand(&mut self, key: &PersonaKey, text: &str, source: Source) -> EngineResult<()> {
        let subject = source.subject.as_deref();
        let held = self.held(&key.name, subject);
        if self.duplicates(key, &held, text)? {
            return Ok(());
        }
        let round = source.round;
        let new = persona_memory(self.job, key, text, source.turns.clone(), round, subject);
        if key.kind == KeyKind::Contradictory {
            if let Some(opposite) = key.opposite.as_deref() {
                self.drop_contradicted(key, opposite, text, round, subject)?;
            }
        }
        if key.kind == KeyKind::Trajectory {
            self.age_trajectory(key, round, subject);
        }
        self.add(new);
        Ok(())
    }

    /// Forget the values of `opposite` that `text` (a value of `key`) contradicts.
    fn drop_contradicted(
        &mut self,
        key: &PersonaKey,
        opposite: &str,
        text: &str,
        round: u64,
        subject: Option<&str>,
    ) -> EngineResult<()> {
        let mut i = 0;
        while i < self.sketch.len() {
            if !holds(&self.sketch[i], opposite, subject) {
                i += 1;
                continue;
            }
            let old = value_of(&self.sketch[i]).to_string();
            let similarity = if self.rules.embedding_merge {
                self.vectors.similarity(&old, text)?
            } else if normalized(&old) == normalized(text) {
                1.0
            } else {
                0.0
            };
            if similarity >= self.rules.contradiction_similarity {
                self.drop_at(i, |_| {
                    format!(
                        "moom: '{opposite}: {old}' contradicted by '{}: {text}' at round {round} (similarity {similarity:.2})",
                        key.name
                    )
                });
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Make room for one more value of a trajectory key: the oldest said go.
    fn age_trajectory(&mut self, key: &PersonaKey, round: u64, subject: Option<&str>) {
        let mut of_key = self.held(&key.name, subject);
        of_key.sort_by_key(|i| said_round(&self.sketch[*i]));
        let keep = self.rules.trajectory_keep;
        let excess = (of_key.len() + 1).saturating_sub(keep);
        let mut aged: Vec<usize> = of_key.into_iter().take(excess).collect();
        aged.sort_unstable();
        for i in aged.into_iter().rev() {
            self.drop_at(i, |old| {
                format!(
                    "moom: '{}' aged out of '{}' (said at round {}, {keep} newer values) at round {round}",
                    value_of(old),
                    key.name,
                    said_round(old),
                )
            });
        }
    }

    /// One complex key's gathered values: merged with the held value by the model (or, in the
    /// rule-only ablation, appended like an expandable key).
    fn merge_complex(&mut self, values: ComplexValues) -> EngineResult<()> {
        let ComplexValues {
            key,
            texts,
            mut sources,
            round,
            subject,
        } = values;
        let subject = subject.as_deref();
        let new_text = texts.join("; ");
        let held = self.held(&key.name, subject);
        if !self.rules.model_merge {
            for text in texts {
                if held
                    .iter()
                    .any(|i| normalized(value_of(&self.sketch[*i])) == normalized(&text))
                {
                    continue;
                }
                let new = persona_memory(self.job, &key, &text, sources.clone(), round, subject);
                self.add(new);
            }
            return Ok(());
        }
        let merged = match held.last() {
            Some(i) => {
                let old = value_of(&self.sketch[*i]).to_string();
                if normalized(&old).contains(&normalized(&new_text)) {
                    return Ok(());
                }
                self.ctx.model.merge(&old, &new_text)?
            }
            None => new_text,
        };
        for i in &held {
            sources.extend(self.sketch[*i].provenance.iter().copied());
        }
        sources.sort();
        sources.dedup();
        let new = persona_memory(self.job, &key, merged.trim(), sources, round, subject);
        for i in held.into_iter().rev() {
            self.drop_at(i, |_| {
                format!(
                    "moom: '{}' merged into {} at round {round}",
                    key.name, new.id
                )
            });
        }
        self.add(new);
        Ok(())
    }
}

/// The new values of one complex key of one subject, merged together at the end.
struct ComplexValues {
    key: PersonaKey,
    texts: Vec<String>,
    sources: Vec<TurnId>,
    round: u64,
    subject: Option<String>,
}

/// Does `memory` hold a value of `key` about `subject`? A value stored without a subject
/// (before subjects were recorded) belongs to every subject.
fn holds(memory: &Memory, key: &str, subject: Option<&str>) -> bool {
    key_of(memory) == Some(key)
        && match (subject_of(memory), subject) {
            (Some(held), Some(new)) => held == new,
            _ => true,
        }
}

fn persona_memory(
    job: &Job,
    key: &PersonaKey,
    value: &str,
    provenance: Vec<TurnId>,
    round: u64,
    subject: Option<&str>,
) -> Memory {
    let mut metadata = Metadata::new();
    metadata.insert(VALUE_KEY.into(), value.to_string());
    metadata.insert(SAID_ROUND_KEY.into(), round.to_string());
    if let Some(subject) = subject {
        metadata.insert(SUBJECT_KEY.into(), subject.to_string());
    }
    derived_memory(
        job,
        MemoryKind::Persona {
            key: key.name.clone(),
        },
        render_statement(subject, &key.name, value),
        provenance,
        job.created,
        metadata,
    )
}

/// Remove a value from the sketch: forgotten with `reason` when stored, simply not written
/// when this same merge made it.
fn drop_value(memory: &Memory, reason: String, job: &Job, derived: &mut Derived) {
    if let Some(at) = derived.memories.iter().position(|m| m.id == memory.id) {
        derived.memories.remove(at);
        return;
    }
    derived.forgets.push(BatchForget {
        id: memory.id,
        reason,
        cause: ForgetCause::preset(super::NAME),
        at: job.created,
    });
}
