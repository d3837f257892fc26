//! Human-readable printing of search results, memories, histories, views and jobs. Times are
//! ISO 8601 (UTC): the turn's own time when its source gave one.

use mnemos_core::{
    HistoryEntry, Hit, Memory, MemoryState, Moment, Paged, Timestamp, Turn, UserKey,
};
use mnemos_engine::{
    JobReport, PendingJob, PersonaKeyView, SearchResults, TimelineNode, View, SPEAKER_KEY,
};

/// `2023-05-08T13:56:00Z`.
pub fn iso(time: Timestamp) -> String {
    chrono::DateTime::from_timestamp_millis(time.millis())
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("{} ms", time.millis()))
}

/// `2023-05-08T13:56:00Z (round 12)`.
fn when(at: Moment) -> String {
    format!("{} (round {})", iso(at.time), at.round)
}

fn one_line(text: &str, max_chars: usize) -> String {
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

/// Explain one hit: which generators found it, at which rank, and what moved its score.
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
    lines.push(format!("fused  {:>8.4}", b.fused));
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

pub fn print_results(results: &SearchResults, explain_hits: bool) {
    if explain_hits && !results.query_parts.is_empty() {
        println!(
            "searched as {} parts, rankings merged:",
            results.query_parts.len()
        );
        for part in &results.query_parts {
            println!("  - {}", one_line(part, 120));
        }
    }
    if results.hits.is_empty() {
        println!("no memories matched");
        return;
    }
    for (i, hit) in results.hits.iter().enumerate() {
        println!(
            "{:>2}. [{:.4}] {}{}",
            i + 1,
            hit.score,
            speaker_prefix(&hit.memory),
            one_line(&hit.memory.text, 160)
        );
        if explain_hits {
            println!("      id {}  kind {}", hit.memory.id, hit.memory.kind.tag());
            for line in explain(hit) {
                println!("      {line}");
            }
        }
    }
    if explain_hits {
        let t = results.timings;
        println!(
            "query terms [{}]; {} candidates; embed {:.2} ms, rank {:.2} ms, fetch {:.2} ms",
            results.query_terms.join(", "),
            results.candidates,
            t.embed_us as f64 / 1000.0,
            t.rank_us as f64 / 1000.0,
            t.fetch_us as f64 / 1000.0
        );
    }
}

pub fn state_text(state: &MemoryState) -> String {
    match state {
        MemoryState::Active => "active".into(),
        MemoryState::Forgotten { reason, at } => format!("forgotten {}: {reason}", when(*at)),
    }
}

pub fn print_memory(memory: &Memory, history: &[HistoryEntry]) {
    println!("memory   {}", memory.id);
    println!("scope    {}", memory.scope);
    println!("kind     {}", memory.kind.tag());
    println!("state    {}", state_text(&memory.state));
    println!("created  {}", when(memory.created));
    println!("version  {}", memory.version);
    println!(
        "from     {}",
        memory
            .provenance
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !memory.metadata.is_empty() {
        let pairs: Vec<String> = memory
            .metadata
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!("metadata {}", pairs.join(" "));
    }
    println!("accessed {} time(s)", memory.access.len());
    println!("text     {}", memory.text);
    println!("history:");
    for entry in history {
        let change = match &entry.change {
            mnemos_core::Change::Created => "created".to_string(),
            mnemos_core::Change::Updated => "updated".to_string(),
            mnemos_core::Change::Forgotten { reason } => format!("forgotten ({reason})"),
            mnemos_core::Change::Restored => "restored".to_string(),
        };
        println!(
            "  v{} {} {change}: {}",
            entry.version,
            when(entry.at),
            one_line(&entry.snapshot.text, 100)
        );
    }
}

pub fn print_turn(turn: &Turn) {
    println!("turn     {}", turn.id);
    println!("scope    {}", turn.scope);
    println!(
        "role     {}{}",
        turn.role.as_str(),
        turn.speaker
            .as_ref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    );
    println!("at       {}", when(turn.at));
    println!("text     {}", turn.text);
}

pub fn print_page(page: &Paged<Memory>) {
    for memory in &page.items {
        println!(
            "{}  {} r{:<5} {:<9} {}{}",
            memory.id,
            iso(memory.created.time),
            memory.created.round,
            memory.kind.tag().as_str(),
            speaker_prefix(memory),
            one_line(&memory.text, 100)
        );
    }
    match page.next_offset {
        Some(next) => println!(
            "({} of {}; next page: --offset {next})",
            page.items.len(),
            page.total
        ),
        None => println!("({} of {})", page.items.len(), page.total),
    }
}

/// A mechanism's recalled context: items by section with their score parts, then the notes.
pub fn print_context(context: &mnemos_engine::Context, explain_items: bool) {
    if context.items.is_empty() {
        println!("(no memories recalled)");
    }
    let mut section = "";
    for item in &context.items {
        if item.section != section {
            section = &item.section;
            println!("  {section}:");
        }
        println!(
            "   - [{}, round {}, {:.3}] {}",
            iso(item.created.time),
            item.created.round,
            item.score,
            one_line(&item.text, 160)
        );
        if explain_items {
            let parts: Vec<String> = item
                .breakdown
                .iter()
                .map(|p| format!("{} {:.3}", p.name, p.value))
                .collect();
            println!(
                "       {} {}; from {} turn(s){}",
                item.kind.tag(),
                item.memory_id,
                item.provenance.len(),
                if parts.is_empty() {
                    String::new()
                } else {
                    format!("; {}", parts.join(", "))
                }
            );
        }
    }
    for note in &context.notes {
        println!("  note: {note}");
    }
    println!(
        "  {} item(s), {} tokens (preset {})",
        context.items.len(),
        context.tokens,
        context.mechanism
    );
}

/// `mnemos presets`: every preset with its parameters and defaults.
pub fn print_presets(presets: &[mnemos_engine::PresetInfo]) {
    for preset in presets {
        println!("{} — {}", preset.name, preset.summary);
        for param in &preset.params {
            println!("    {} = {}    {}", param.name, param.default, param.doc);
        }
        if preset.params.is_empty() {
            println!("    (no parameters)");
        }
    }
}

/// "tenant/user", or "tenant/user (agent A)" when one agent is shown.
fn whose(user: &UserKey, agent: Option<&str>) -> String {
    agent.map_or_else(|| user.to_string(), |a| format!("{user} (agent {a})"))
}

/// The persona sketch: each key's current values, then what it held before and why it left.
fn print_persona(user: &UserKey, agent: Option<&str>, keys: &[PersonaKeyView]) {
    let whose = whose(user, agent);
    if keys.is_empty() {
        println!("no persona for {whose} (the moom preset builds one)");
        return;
    }
    println!("persona of {whose}");
    let mut subject = None;
    for key in keys {
        if subject != Some(&key.subject) {
            subject = Some(&key.subject);
            if let Some(name) = &key.subject {
                println!("{name}");
            }
        }
        let indent = if key.subject.is_some() { "  " } else { "" };
        println!("{indent}{}", key.key);
        for value in &key.current {
            println!(
                "{indent}  * {}  (said in round {})",
                value.value, value.said_round
            );
        }
        for value in &key.history {
            println!(
                "{indent}    was: {}  (round {}) — {}",
                value.value,
                value.said_round,
                value.reason.as_deref().unwrap_or("forgotten")
            );
        }
    }
}

/// The plot tree, highest summaries first, each node indented under the one that covers it.
fn print_timeline(user: &UserKey, agent: Option<&str>, tree: &[TimelineNode]) {
    let whose = whose(user, agent);
    if tree.is_empty() {
        println!("no plot timeline for {whose} (the moom preset builds one)");
        return;
    }
    println!("plot timeline of {whose}");
    fn walk(node: &TimelineNode, depth: usize) {
        let indent = "  ".repeat(depth);
        let state = match &node.reason {
            Some(reason) => format!(" [forgotten: {reason}]"),
            None => String::new(),
        };
        let dates = match (node.from_time, node.to_time) {
            (Some(from), Some(to)) => format!(", {} – {}", iso(from), iso(to)),
            _ => String::new(),
        };
        println!(
            "{indent}L{} rounds {}–{}{dates} ({} turns){state}  {}",
            node.level,
            node.from_round,
            node.to_round,
            node.turns,
            one_line(&node.text, 120)
        );
        for child in &node.children {
            walk(child, depth + 1);
        }
    }
    for node in tree {
        walk(node, 0);
    }
}

/// A preset's view of a user's memories.
pub fn print_view(user: &UserKey, agent: Option<&str>, view: &View) {
    match view {
        View::Persona(keys) => print_persona(user, agent, keys),
        View::Timeline(tree) => print_timeline(user, agent, tree),
    }
}

/// What derived jobs did (failures and stuck jobs are never silent).
pub fn print_jobs(jobs: &JobReport) {
    if jobs.is_empty() {
        return;
    }
    println!(
        "derived jobs: {} ran, {} failed; memories +{} created, {} updated, {} forgotten",
        jobs.ran,
        jobs.failed,
        jobs.memories_created,
        jobs.memories_updated,
        jobs.memories_forgotten
    );
    for (id, error) in jobs.errors.iter().take(5) {
        eprintln!("job {id} failed (it stays pending and is retried): {error}");
    }
    for (id, error) in &jobs.stuck {
        eprintln!(
            "job {id} gave up after repeated failures: {error} (`mnemos jobs retry {id} --user …`)"
        );
    }
}

/// `mnemos jobs`: one line per pending job.
pub fn print_pending_jobs(jobs: &[PendingJob]) {
    if jobs.is_empty() {
        println!("no pending job");
        return;
    }
    for pending in jobs {
        let job = &pending.job;
        let error = job
            .last_error
            .as_deref()
            .map(|e| format!(" — last error: {}", one_line(e, 120)))
            .unwrap_or_default();
        println!(
            "{}  {:<7} {}/{} {} {} (agent {}, {}, {} attempt(s)){error}",
            job.id,
            format!("{:?}", pending.state).to_lowercase(),
            pending.user.tenant,
            pending.user.user,
            job.mechanism,
            job.kind,
            job.scope.agent,
            iso(job.created.time),
            job.attempts
        );
    }
    println!("({} pending; `mnemos jobs run` runs them)", jobs.len());
}
