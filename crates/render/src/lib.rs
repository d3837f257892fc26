//! Plain-text renderings of what the engine returns, for people and for agents: search results
//! with their explanations, a memory card with its history, what a forget by description
//! selected, a recalled context, a preset's view, job reports. The CLI prints them; a server can return them as tool text. Every
//! function returns whole lines, each ending in `\n`. Times are ISO 8601 (UTC): the turn's own
//! time when its source gave one.

use mnemos_core::{Change, HistoryEntry, Hit, Memory, MemoryState, Moment, Paged, Turn, UserKey};

use mnemos_engine::{
    ChainsView, Context, ForgetMatchReport, JobReport, PendingJob, PersonaKeyView, PresetInfo,
    SearchResults, TimelineNode, View, SPEAKER_KEY,
};

/// Lines of text, joined with a newline after each.
#[derive(Default)]
struct Lines(Vec<String>);

impl Lines {
    fn push(&mut self, line: impl Into<String>) {
        self.0.push(line.into());
    }

    fn finish(self) -> String {
        self.0.iter().map(|line| format!("{line}\n")).collect()
    }
}

pub use mnemos_engine::primitives::iso;

/// `2023-05-08T13:56:00Z (round 12)`.
fn when(at: Moment) -> String {
    format!("{} (round {})", iso(at.time), at.round)
}

/// The text on one line (whitespace runs become one space), cut to `max_chars` with `…`.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        flat
    } else {
        let cut: String = flat.chars().take(max_chars).collect();
        format!("{cut}…")
    }
}

fn speaker_prefix(memory: &Memory) -> String {
    memory
        .metadata
        .get(SPEAKER_KEY)
        .map(|s| format!("{s}: "))
        .unwrap_or_default()
}

/// Why one hit ranked where it did: which generators found it, at which rank, and what moved
/// its score, one line each (without newlines).
pub fn explain(hit: &Hit) -> Vec<String> {
    let b = &hit.breakdown;
    let mut lines = Vec::new();
    match b.lexical {
        Some(s) => {
            let terms = if b.matched_terms.is_empty() {
                String::new()
            } else {
                format!(" matched [{}]", b.matched_terms.join(", "))
            };
            lines.push(format!(
                "bm25   {:>8.3}  rank {:>3}{terms}",
                s.score, s.rank
            ));
        }
        None => lines.push("bm25        —   no query term in common".to_string()),
    }
    match b.dense {
        Some(s) => lines.push(format!(
            "dense  {:>8.3}  rank {:>3}  (cosine)",
            s.score, s.rank
        )),
        None => lines.push("dense       —   not among the nearest vectors".to_string()),
    }
    if let Some(h) = &b.second_hop {
        lines.push(format!("hop 2  {:>+8.4}  via memory {}", h.added, h.via));
    }
    if let Some(c) = &b.context {
        lines.push(format!(
            "turn   {:>+8.4}  next to memory {}",
            c.added, c.via
        ));
    }
    if let Some(added) = b.speaker {
        lines.push(format!("named  {added:>+8.4}  the query names its speaker"));
    }
    if let Some(added) = b.date {
        lines.push(format!(
            "dated  {added:>+8.4}  from the period the query names"
        ));
    }
    if let Some(r) = &b.ranker {
        let strongest: Vec<String> = r
            .strongest
            .iter()
            .map(|(name, c)| format!("{name} {c:+.2}"))
            .collect();
        lines.push(format!(
            "ranker {:>8.4}  chance of evidence ({})",
            r.probability,
            strongest.join(", ")
        ));
    }
    if b.ranker.is_none() {
        lines.push(format!("fused  {:>8.4}", b.fused));
    }
    if let Some(r) = &b.relevance {
        let strongest: Vec<String> = r
            .strongest
            .iter()
            .map(|(name, c)| format!("{name} {c:+.2}"))
            .collect();
        lines.push(format!(
            "relev. {:>8.4}  chance of evidence on every query's scale ({})",
            r.probability,
            strongest.join(", ")
        ));
    }
    for adj in &b.adjustments {
        lines.push(format!(
            "{:<6} {:>8.4}  ({:+.4})",
            adj.name, adj.value, adj.delta
        ));
    }
    lines.push(format!(
        "from   {} turn(s), round {}, {} tokens, {}",
        hit.memory.provenance.len(),
        hit.memory.created.round,
        hit.tokens,
        iso(hit.memory.created.time)
    ));
    lines
}

/// Ranked hits; with `explain_hits`, the query's parts, each hit's explanation and the timings.
pub fn search_results(results: &SearchResults, explain_hits: bool) -> String {
    let mut out = Lines::default();
    if explain_hits && !results.query_parts.is_empty() {
        let parts = results.query_parts.len();
        out.push(format!("searched as {parts} parts, rankings merged:"));
        for part in &results.query_parts {
            out.push(format!("  - {}", one_line(part, 120)));
        }
    }
    if results.hits.is_empty() {
        out.push("no memories matched");
        return out.finish();
    }
    for (i, hit) in results.hits.iter().enumerate() {
        // A replaced memory (returned only when asked for) never reads as current.
        let superseded = match hit.memory.valid_to {
            Some(until) => format!("  [superseded {}]", iso(until)),
            None => String::new(),
        };
        out.push(format!(
            "{:>2}. [{:.4}] {}{}{superseded}",
            i + 1,
            hit.score,
            speaker_prefix(&hit.memory),
            one_line(&hit.memory.text, 160)
        ));
        if explain_hits {
            out.push(format!(
                "      id {}  kind {}",
                hit.memory.id,
                hit.memory.kind.tag()
            ));
            for line in explain(hit) {
                out.push(format!("      {line}"));
            }
        }
    }
    if explain_hits {
        let t = results.timings;
        out.push(format!(
            "query terms [{}]; {} candidates; embed {:.2} ms, rank {:.2} ms, fetch {:.2} ms",
            results.query_terms.join(", "),
            results.candidates,
            t.embed_us as f64 / 1000.0,
            t.rank_us as f64 / 1000.0,
            t.fetch_us as f64 / 1000.0
        ));
    }
    out.finish()
}

/// The memories a forget by description selected, one a line, each with its id, kind,
/// relevance and why it was selected; then what goes with them, whether the limit cut the
/// list, and the ids asked for that were not selected. Nothing when nothing was selected.
pub fn forget_candidates(report: &ForgetMatchReport) -> String {
    let mut out = Lines::default();
    for (i, candidate) in report.candidates.iter().enumerate() {
        let memory = &candidate.memory;
        let superseded = match memory.valid_to {
            Some(until) => format!("  [superseded {}]", iso(until)),
            None => String::new(),
        };
        out.push(format!(
            "{:>2}. {}{}{superseded}",
            i + 1,
            speaker_prefix(memory),
            one_line(&memory.text, 160)
        ));
        let relevance = candidate
            .relevance
            .map_or(String::new(), |r| format!("relevance {r:.4} · "));
        out.push(format!(
            "      id {} · {} · {relevance}by {}",
            memory.id,
            memory.kind.tag(),
            candidate.by.as_str()
        ));
    }
    if report.derived > 0 {
        out.push(format!(
            "and {} memory(ies) derived from them (summaries, facts…)",
            report.derived
        ));
    }
    if report.truncated {
        out.push("more memories match than the limit let through");
    }
    if !report.skipped.is_empty() {
        let ids: Vec<String> = report.skipped.iter().map(ToString::to_string).collect();
        out.push(format!("not selected, left alone: {}", ids.join(", ")));
    }
    out.finish()
}

/// `active`, or when and why the memory was forgotten.
pub fn state(state: &MemoryState) -> String {
    match state {
        MemoryState::Active => "active".into(),
        MemoryState::Forgotten { reason, at, .. } => format!("forgotten {}: {reason}", when(*at)),
    }
}

/// Every field of a memory, then its versions.
pub fn memory_card(memory: &Memory, history: &[HistoryEntry]) -> String {
    let mut out = Lines::default();
    out.push(format!("memory   {}", memory.id));
    out.push(format!("scope    {}", memory.scope));
    out.push(format!("kind     {}", memory.kind.tag()));
    out.push(format!("state    {}", state(&memory.state)));
    out.push(format!("created  {}", when(memory.created)));
    out.push(format!("version  {}", memory.version));
    let from: Vec<String> = memory.provenance.iter().map(ToString::to_string).collect();
    out.push(format!("from     {}", from.join(", ")));
    if !memory.metadata.is_empty() {
        let pairs: Vec<String> = memory
            .metadata
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.push(format!("metadata {}", pairs.join(" ")));
    }
    out.push(format!("accessed {} time(s)", memory.access.len()));
    out.push(format!("text     {}", memory.text));
    out.push("history:");
    for entry in history {
        let change = match &entry.change {
            Change::Created => "created".to_string(),
            Change::Updated => "updated".to_string(),
            Change::Forgotten { reason } => format!("forgotten ({reason})"),
            Change::Restored => "restored".to_string(),
            Change::Erased { reason } => format!("erased ({reason})"),
        };
        out.push(format!(
            "  v{} {} {change}: {}",
            entry.version,
            when(entry.at),
            one_line(&entry.snapshot.text, 100)
        ));
    }
    out.finish()
}

/// Every field of a raw turn.
pub fn turn_card(turn: &Turn) -> String {
    let speaker = turn
        .speaker
        .as_ref()
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    let mut out = Lines::default();
    out.push(format!("turn     {}", turn.id));
    out.push(format!("scope    {}", turn.scope));
    out.push(format!("role     {}{speaker}", turn.role.as_str()));
    out.push(format!("at       {}", when(turn.at)));
    out.push(format!("text     {}", turn.text));
    out.finish()
}

/// One line per memory, then where the next page starts.
pub fn memory_page(page: &Paged<Memory>) -> String {
    let mut out = Lines::default();
    for memory in &page.items {
        out.push(format!(
            "{}  {} r{:<5} {:<9} {}{}",
            memory.id,
            iso(memory.created.time),
            memory.created.round,
            memory.kind.tag().as_str(),
            speaker_prefix(memory),
            one_line(&memory.text, 100)
        ));
    }
    let shown = page.items.len();
    out.push(match page.next_offset {
        Some(next) => format!("({shown} of {}; next page: --offset {next})", page.total),
        None => format!("({shown} of {})", page.total),
    });
    out.finish()
}

/// A mechanism's recalled context: items by section (with their score parts when
/// `explain_items`), then the notes and the size.
pub fn context(context: &Context, explain_items: bool) -> String {
    let mut out = Lines::default();
    if context.items.is_empty() {
        out.push("(no memories recalled)");
    }
    let mut section = "";
    for item in &context.items {
        if item.section != section {
            section = &item.section;
            out.push(format!("  {section}:"));
        }
        out.push(format!(
            "   - [{}, round {}, {:.3}] {}",
            iso(item.created.time),
            item.created.round,
            item.score,
            one_line(&item.text, 160)
        ));
        if explain_items {
            let parts: Vec<String> = item
                .breakdown
                .iter()
                .map(|p| format!("{} {:.3}", p.name, p.value))
                .collect();
            let parts = if parts.is_empty() {
                String::new()
            } else {
                format!("; {}", parts.join(", "))
            };
            out.push(format!(
                "       {} {}; from {} turn(s){}",
                item.kind.tag(),
                item.memory_id,
                item.provenance.len(),
                parts
            ));
        }
    }
    for note in &context.notes {
        out.push(format!("  note: {note}"));
    }
    out.push(format!(
        "  {} item(s), {} tokens (preset {})",
        context.items.len(),
        context.tokens,
        context.mechanism
    ));
    out.finish()
}

/// Every preset with its parameters and defaults.
pub fn presets(presets: &[PresetInfo]) -> String {
    let mut out = Lines::default();
    for preset in presets {
        out.push(format!("{} — {}", preset.name, preset.summary));
        for param in &preset.params {
            out.push(format!(
                "    {} = {}    {}",
                param.name, param.default, param.doc
            ));
        }
        if preset.params.is_empty() {
            out.push("    (no parameters)");
        }
    }
    out.finish()
}

/// A preset's view of a user's memories (of one agent when `agent` is given).
pub fn view(user: &UserKey, agent: Option<&str>, view: &View) -> String {
    let whose = agent.map_or_else(|| user.to_string(), |a| format!("{user} (agent {a})"));
    let mut out = Lines::default();
    match view {
        View::Persona(keys) => persona(&mut out, &whose, keys),
        View::Timeline(tree) => timeline(&mut out, &whose, tree),
        View::Chains(chains) => memory_chains(&mut out, &whose, chains),
    }
    out.finish()
}

/// The persona sketch: each key's current values, then what it held before and why it left.
fn persona(out: &mut Lines, whose: &str, keys: &[PersonaKeyView]) {
    if keys.is_empty() {
        out.push(format!(
            "no persona for {whose} (the moom preset builds one)"
        ));
        return;
    }
    out.push(format!("persona of {whose}"));
    let mut subject = None;
    for key in keys {
        if subject != Some(&key.subject) {
            subject = Some(&key.subject);
            if let Some(name) = &key.subject {
                out.push(name.clone());
            }
        }
        let indent = if key.subject.is_some() { "  " } else { "" };
        out.push(format!("{indent}{}", key.key));
        for value in &key.current {
            out.push(format!(
                "{indent}  * {}  (said in round {})",
                value.value, value.said_round
            ));
        }
        for value in &key.history {
            out.push(format!(
                "{indent}    was: {}  (round {}) — {}",
                value.value,
                value.said_round,
                value.reason.as_deref().unwrap_or("forgotten")
            ));
        }
    }
}

/// The plot tree, highest summaries first, each node indented under the one that covers it.
fn timeline(out: &mut Lines, whose: &str, tree: &[TimelineNode]) {
    if tree.is_empty() {
        out.push(format!(
            "no plot timeline for {whose} (the moom preset builds one)"
        ));
        return;
    }
    out.push(format!("plot timeline of {whose}"));
    fn walk(out: &mut Lines, node: &TimelineNode, depth: usize) {
        let indent = "  ".repeat(depth);
        let state = match &node.reason {
            Some(reason) => format!(" [forgotten: {reason}]"),
            None => String::new(),
        };
        let dates = match (node.from_time, node.to_time) {
            (Some(from), Some(to)) => format!(", {} – {}", iso(from), iso(to)),
            _ => String::new(),
        };
        out.push(format!(
            "{indent}L{} rounds {}–{}{dates} ({} turns){state}  {}",
            node.level,
            node.from_round,
            node.to_round,
            node.turns,
            one_line(&node.text, 120)
        ));
        for child in &node.children {
            walk(out, child, depth + 1);
        }
    }
    for node in tree {
        walk(out, node, 0);
    }
}

/// The memory chains: each category's nodes in time order (shared nodes name their other
/// chains, compressed ones their steps), then what calibration superseded.
fn memory_chains(out: &mut Lines, whose: &str, view: &ChainsView) {
    if view.chains.is_empty() && view.calibrations.is_empty() {
        out.push(format!(
            "no memory chains for {whose} (the m4 preset builds them when a session closes)"
        ));
        return;
    }
    out.push(format!("memory chains of {whose}"));
    for chain in &view.chains {
        out.push(format!(
            "chain \"{}\" ({} nodes)",
            chain.category,
            chain.nodes.len()
        ));
        for (i, node) in chain.nodes.iter().enumerate() {
            let mut notes = Vec::new();
            let others: Vec<&str> = node
                .categories
                .iter()
                .filter(|c| **c != chain.category)
                .map(String::as_str)
                .collect();
            if !others.is_empty() {
                notes.push(format!("shared with: {}", others.join(", ")));
            }
            if node.compressions > 0 {
                let before = node.original_tokens.unwrap_or(node.tokens);
                notes.push(format!(
                    "compressed ×{}: {before} → {} tokens",
                    node.compressions, node.tokens
                ));
            }
            if !node.calibrated_from.is_empty() {
                notes.push(format!("supersedes {}", node.calibrated_from.len()));
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!("  [{}]", notes.join("; "))
            };
            out.push(format!(
                "  {}. {} {}{notes}  {}",
                i + 1,
                iso(node.time),
                node.id,
                one_line(&node.text, 120)
            ));
        }
    }
    if !view.calibrations.is_empty() {
        out.push("calibration history (superseded, kept in history)".to_string());
        for c in &view.calibrations {
            let until = c.valid_to.map_or_else(|| "?".to_string(), iso);
            out.push(format!(
                "  until {until}: {} {} → superseded by {}",
                c.stale,
                one_line(&c.stale_text, 80),
                c.superseded_by.as_deref().unwrap_or("?")
            ));
        }
    }
}

/// What derived jobs did, as `(summary, problems)`: the summary is empty when nothing ran;
/// the problems (failures, jobs that gave up) are never left out.
pub fn job_report(jobs: &JobReport) -> (String, String) {
    if jobs.is_empty() {
        return (String::new(), String::new());
    }
    let mut summary = Lines::default();
    summary.push(format!(
        "derived jobs: {} ran, {} failed; memories +{} created, {} updated, {} forgotten",
        jobs.ran,
        jobs.failed,
        jobs.memories_created,
        jobs.memories_updated,
        jobs.memories_forgotten
    ));
    let mut problems = Lines::default();
    for (id, error) in jobs.errors.iter().take(5) {
        problems.push(format!(
            "job {id} failed (it stays pending and is retried): {error}"
        ));
    }
    for (id, error) in &jobs.stuck {
        problems.push(format!(
            "job {id} gave up after repeated failures: {error} (`mnemos jobs retry {id} --user …`)"
        ));
    }
    (summary.finish(), problems.finish())
}

/// One line per pending job, then how many and how to run them.
pub fn pending_jobs(jobs: &[PendingJob]) -> String {
    let mut out = Lines::default();
    if jobs.is_empty() {
        out.push("no pending job");
        return out.finish();
    }
    for pending in jobs {
        let job = &pending.job;
        let error = job
            .last_error
            .as_deref()
            .map(|e| format!(" — last error: {}", one_line(e, 120)))
            .unwrap_or_default();
        out.push(format!(
            "{}  {:<7} {}/{} {} {} (agent {}, {}, {} attempt(s)){error}",
            job.id,
            pending.state.as_str(),
            pending.user.tenant,
            pending.user.user,
            job.mechanism,
            job.kind,
            job.scope.agent,
            iso(job.created.time),
            job.attempts
        ));
    }
    out.push(format!(
        "({} pending; `mnemos jobs run` runs them)",
        jobs.len()
    ));
    out.finish()
}

/// One line per API key: id, tenant, prefix, name, created, and whether it still works.
pub fn api_keys(keys: &[mnemos_core::ApiKey]) -> String {
    if keys.is_empty() {
        return "No API keys (`mnemos keys create --tenant T` makes one).\n".to_string();
    }
    let mut out = String::new();
    for key in keys {
        let state = match key.revoked_at {
            Some(at) => format!("revoked {}", iso(at)),
            None => "active".to_string(),
        };
        out.push_str(&format!(
            "{}  {:<16} {}…  {:<20} created {}  {state}\n",
            key.id,
            key.tenant,
            key.prefix,
            key.name,
            iso(key.created_at)
        ));
    }
    out
}

/// One user at a glance: turns, memories by kind and state, last activity, jobs.
pub fn user_overview(user: &UserKey, overview: &mnemos_inspect::UserOverview) -> String {
    let kinds: Vec<String> = overview
        .memories
        .iter()
        .map(|(kind, n)| format!("{} {}/{}", kind.as_str(), n.active, n.forgotten))
        .collect();
    let last = overview
        .last_activity
        .map_or_else(|| "never".to_string(), when);
    let jobs = overview.jobs;
    format!(
        "{}  {} turns in {} sessions; memories active/forgotten: {}; last activity {last}; jobs {} pending, {} failed, {} stuck\n",
        user.user,
        overview.turns,
        overview.sessions,
        if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") },
        jobs.pending,
        jobs.failed,
        jobs.stuck,
    )
}

/// Memories kept over the rounds (one line per point of the series) and who forgot the rest.
pub fn retention(retention: &mnemos_inspect::Retention) -> String {
    let mut out = Lines::default();
    out.push(format!(
        "{:>7} {:>8} {:>8} {:>9}",
        "round", "active", "created", "forgotten"
    ));
    for point in &retention.series {
        out.push(format!(
            "{:>7} {:>8} {:>8} {:>9}",
            point.round, point.active, point.created, point.forgotten
        ));
    }
    let causes: Vec<String> = retention
        .forgotten_by
        .iter()
        .map(|(cause, n)| format!("{cause} {n}"))
        .collect();
    out.push(format!(
        "forgotten by: {}",
        if causes.is_empty() {
            "nothing forgotten".to_string()
        } else {
            causes.join(", ")
        }
    ));
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_are_utc_seconds() {
        assert_eq!(
            iso(mnemos_core::Timestamp::from_millis(1_683_554_160_000)),
            "2023-05-08T13:56:00Z"
        );
    }

    #[test]
    fn one_line_flattens_and_cuts_by_characters() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("我喜欢在周末去爬山", 4), "我喜欢在…");
    }

    #[test]
    fn lines_end_in_newlines() {
        let mut out = Lines::default();
        out.push("one");
        out.push(String::from("二"));
        assert_eq!(out.finish(), "one\n二\n");
        assert_eq!(Lines::default().finish(), "");
    }

    #[test]
    fn empty_job_report_prints_nothing() {
        assert_eq!(
            job_report(&JobReport::default()),
            (String::new(), String::new())
        );
    }
}
