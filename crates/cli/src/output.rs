//! Human-readable printing of search results, memories and histories.

use mnemos_core::{HistoryEntry, Hit, Memory, MemoryState, Paged, SearchResults, Turn};

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
        .get(mnemos_core::memories::SPEAKER_KEY)
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
        "from   {} turn(s), round {}, {} tokens",
        hit.memory.provenance.len(),
        hit.memory.created.round,
        hit.tokens
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

fn state_text(state: &MemoryState) -> String {
    match state {
        MemoryState::Active => "active".into(),
        MemoryState::Forgotten { reason, at } => {
            format!("forgotten at round {}: {reason}", at.round)
        }
    }
}

pub fn print_memory(memory: &Memory, history: &[HistoryEntry]) {
    println!("memory   {}", memory.id);
    println!("scope    {}", memory.scope);
    println!("kind     {}", memory.kind.tag());
    println!("state    {}", state_text(&memory.state));
    println!(
        "created  round {} at {} ms",
        memory.created.round,
        memory.created.time.millis()
    );
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
            "  v{} round {:<5} {change}: {}",
            entry.version,
            entry.at.round,
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
    println!(
        "at       round {} / {} ms",
        turn.at.round,
        turn.at.time.millis()
    );
    println!("text     {}", turn.text);
}

pub fn print_page(page: &Paged<Memory>) {
    for memory in &page.items {
        println!(
            "{}  r{:<5} {:<9} {}{}",
            memory.id,
            memory.created.round,
            memory.kind.tag(),
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
            "   - [round {}, {:.3}] {}",
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
fn whose(user: &mnemos_core::UserKey, agent: Option<&str>) -> String {
    agent.map_or_else(|| user.to_string(), |a| format!("{user} (agent {a})"))
}

/// The persona sketch: each key's current values, then what it held before and why it left.
pub fn print_persona(
    user: &mnemos_core::UserKey,
    agent: Option<&str>,
    keys: &[mnemos_engine::presets::moom::view::PersonaKeyView],
) {
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
pub fn print_timeline(
    user: &mnemos_core::UserKey,
    agent: Option<&str>,
    tree: &[mnemos_engine::presets::moom::view::TimelineNode],
) {
    let whose = whose(user, agent);
    if tree.is_empty() {
        println!("no plot timeline for {whose} (the moom preset builds one)");
        return;
    }
    println!("plot timeline of {whose}");
    fn walk(node: &mnemos_engine::presets::moom::view::TimelineNode, depth: usize) {
        let indent = "  ".repeat(depth);
        let state = match &node.reason {
            Some(reason) => format!(" [forgotten: {reason}]"),
            None => String::new(),
        };
        println!(
            "{indent}L{} rounds {}–{} ({} turns){state}  {}",
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
