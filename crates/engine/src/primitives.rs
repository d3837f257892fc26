//! What the engine and every mechanism share: token estimates, budgets, and the context a
//! recall hands back (packing and rendering). Building blocks only presets use live with them
//! (`mnemos_presets::primitives`).

use mnemos_core::Memory;
use mnemos_text::Analyzer;

use crate::mechanism::{Context, ContextItem};

/// Approximate LLM tokens of `text` (the analyzer's estimate, shared by every budget).
pub fn tokens(text: &str) -> usize {
    Analyzer::shared().count_tokens(text)
}

/// The longest prefix of `text` (cut at a character boundary, preferring a word boundary)
/// whose token estimate fits `budget`. Empty if nothing fits.
pub fn truncate_to_tokens(text: &str, budget: usize) -> String {
    if tokens(text) <= budget {
        return text.to_string();
    }
    if budget == 0 {
        return String::new();
    }
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    // Largest prefix that fits, by binary search over character boundaries.
    let (mut lo, mut hi) = (0usize, bounds.len() - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if tokens(&text[..bounds[mid]]) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let prefix = &text[..bounds[lo]];
    // Do not end in the middle of a Latin word when a space is close by.
    match prefix.rfind(' ') {
        Some(space) if space * 5 >= prefix.len() * 4 => format!("{}…", prefix[..space].trim_end()),
        _ if prefix.is_empty() => String::new(),
        _ => format!("{prefix}…"),
    }
}

/// Keep items in their given order while they fit `budget` tokens (as rendered). The first
/// item that does not fit is cut to the remaining budget when nothing has been kept yet, so a
/// huge memory never crowds out everything; later ones are skipped.
pub fn pack_within_budget(items: Vec<ContextItem>, budget: usize) -> Vec<ContextItem> {
    let mut used = 0usize;
    let mut out = Vec::new();
    for mut item in items {
        let cost = item_tokens(&item);
        if used + cost <= budget {
            used += cost;
            out.push(item);
        } else if out.is_empty() {
            let overhead = cost.saturating_sub(item.tokens);
            let room = budget.saturating_sub(used + overhead);
            let cut = truncate_to_tokens(&item.text, room);
            if cut.is_empty() {
                continue;
            }
            item.text = cut;
            item.tokens = tokens(&item.text);
            used += item_tokens(&item);
            out.push(item);
        }
    }
    out
}

/// Tokens an item costs in the rendered context (its line, with the round prefix).
pub fn item_tokens(item: &ContextItem) -> usize {
    tokens(&render_item(item)) + 1
}

fn render_item(item: &ContextItem) -> String {
    format!("- [round {}] {}", item.created.round, item.text)
}

/// The prompt text: items grouped by section (sections in order of first appearance).
pub fn render(items: &[ContextItem]) -> String {
    let mut sections: Vec<&str> = Vec::new();
    for item in items {
        if !sections.contains(&item.section.as_str()) {
            sections.push(&item.section);
        }
    }
    let mut out = String::new();
    for section in sections {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("## ");
        out.push_str(section);
        out.push('\n');
        for item in items.iter().filter(|i| i.section == section) {
            out.push_str(&render_item(item));
            out.push('\n');
        }
    }
    out
}

/// Pack `items` (already in prompt order) into `budget` and build the context. The rendered
/// text is guaranteed to fit: section headers are paid for by dropping trailing items.
pub fn build_context(
    mechanism: &str,
    query: &str,
    items: Vec<ContextItem>,
    budget: usize,
    notes: Vec<String>,
) -> Context {
    // Section headers are paid for up front, so packing sees the room the items really have.
    let mut sections: Vec<&str> = Vec::new();
    for item in &items {
        if !sections.contains(&item.section.as_str()) {
            sections.push(&item.section);
        }
    }
    let headers: usize = sections
        .iter()
        .map(|s| tokens(&format!("## {s}")) + 1)
        .sum();
    let mut items = pack_within_budget(items, budget.saturating_sub(headers));
    let mut text = render(&items);
    // Estimates of parts and whole can differ by a token or two: trim until it fits.
    while tokens(&text) > budget && !items.is_empty() {
        if items.len() == 1 {
            let item = &mut items[0];
            let shorter = tokens(&item.text).saturating_sub(2);
            item.text = truncate_to_tokens(&item.text, shorter);
            item.tokens = tokens(&item.text);
            if item.text.is_empty() {
                items.clear();
            }
        } else {
            items.pop();
        }
        text = render(&items);
    }
    Context {
        mechanism: mechanism.to_string(),
        query: query.to_string(),
        tokens: tokens(&text),
        items,
        text,
        notes,
    }
}

/// "speaker: text" when the speaker is known.
pub fn speaker_text(memory: &Memory) -> String {
    match memory.speaker() {
        Some(s) => format!("{s}: {}", memory.text),
        None => memory.text.clone(),
    }
}

/// `2023-05-08T13:56:00Z`; a time outside chrono's range shows as milliseconds.
pub fn iso(time: mnemos_core::Timestamp) -> String {
    chrono::DateTime::from_timestamp_millis(time.millis())
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("{} ms", time.millis()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::{MemoryId, MemoryKind, Moment};

    fn item(text: &str, section: &str) -> ContextItem {
        ContextItem {
            memory_id: MemoryId::new(),
            kind: MemoryKind::Turn,
            text: text.into(),
            provenance: vec![],
            created: Moment::default(),
            section: section.into(),
            score: 1.0,
            breakdown: vec![],
            tokens: tokens(text),
        }
    }

    #[test]
    fn truncation_fits_the_budget_in_both_scripts() {
        for text in [
            "the quick brown fox jumps over the lazy dog again and again",
            "今天我们去公园散步，看到了很多美丽的花和可爱的小狗。",
        ] {
            for budget in [0, 1, 3, 7] {
                let cut = truncate_to_tokens(text, budget);
                assert!(tokens(&cut) <= budget + 1, "{budget}: {cut}");
                assert!(cut.len() < text.len());
            }
            assert_eq!(truncate_to_tokens(text, 10_000), text);
        }
    }

    #[test]
    fn built_context_never_exceeds_the_budget() {
        let items: Vec<ContextItem> = (0..20)
            .map(|i| item(&format!("memory number {i} about hiking"), "turns"))
            .collect();
        for budget in [0, 5, 12, 40, 100, 1000] {
            let ctx = build_context("m", "q", items.clone(), budget, vec![]);
            assert!(ctx.tokens <= budget, "{budget}: {}", ctx.tokens);
        }
        let huge = item(&"word ".repeat(5000), "turns");
        let ctx = build_context("m", "q", vec![huge], 50, vec![]);
        assert_eq!(ctx.items.len(), 1);
        assert!(ctx.tokens <= 50);
    }
}
