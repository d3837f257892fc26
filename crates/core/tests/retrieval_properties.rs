//! Properties of the retrieval building blocks: budgeted selection, score fusion and the BM25
//! index's incremental updates.

use mnemos_core::retrieval::{fuse, select_within_budget, top_n, Bm25Index, Bm25Params, Fusion};
use mnemos_core::*;
use proptest::prelude::*;

fn scope(user: &str) -> Scope {
    Scope::new("t", user, "agent", "s1").unwrap()
}

fn hit(tokens: usize, score: f32) -> Hit {
    let turn = Turn {
        id: TurnId::new(),
        scope: scope("p"),
        role: Role::User,
        speaker: None,
        text: "x".into(),
        at: Moment::default(),
        metadata: Metadata::new(),
        key: None,
    };
    Hit {
        memory: Memory::from_turn(&turn),
        score,
        relevance: 1.0,
        tokens,
        breakdown: ScoreBreakdown::default(),
    }
}

proptest! {
    #[test]
    fn budget_selection_respects_budget_and_order(
        sizes in prop::collection::vec(1usize..50, 0..30), budget in 0usize..200, k in 1usize..20
    ) {
        let hits: Vec<Hit> = sizes.iter().enumerate().map(|(i, &t)| hit(t, 100.0 - i as f32)).collect();
        let chosen = select_within_budget(hits, k, Some(budget));
        prop_assert!(chosen.len() <= k);
        prop_assert!(chosen.iter().map(|h| h.tokens).sum::<usize>() <= budget);
        prop_assert!(chosen.windows(2).all(|w| w[0].score > w[1].score));
    }

    #[test]
    fn fusion_output_is_sorted_and_covers_both_lists(
        lex in prop::collection::vec((0u32..40, 0.0f32..20.0), 0..20),
        den in prop::collection::vec((0u32..40, -1.0f32..1.0), 0..20),
    ) {
        let lex = top_n(dedup(lex), 100);
        let den = top_n(dedup(den), 100);
        for fusion in [Fusion::rrf(), Fusion::Weighted { lexical_weight: 0.3, dense_weight: 0.7 }] {
            let fused = fuse(&fusion, &lex, &den);
            prop_assert!(fused.windows(2).all(|w| w[0].1 >= w[1].1));
            for (slot, _) in lex.iter().chain(den.iter()) {
                prop_assert!(fused.iter().any(|f| f.0 == *slot));
            }
        }
        // RRF: appearing in both lists beats appearing at the same rank in one list only.
        let fused = fuse(&Fusion::rrf(), &lex, &den);
        for f in &fused {
            if let (Some(l), Some(d)) = (f.2, f.3) {
                prop_assert!(f.1 > 1.0 / (60.0 + l.rank.min(d.rank) as f32));
            }
        }
    }

    #[test]
    fn bm25_remove_then_reinsert_restores_scores(
        docs in prop::collection::vec(prop::collection::vec(0u8..12, 1..8), 2..12), victim in 0usize..12
    ) {
        let terms = |d: &Vec<u8>| d.iter().map(|t| format!("t{t}")).collect::<Vec<_>>();
        let mut idx = Bm25Index::new(Bm25Params::default());
        for (i, d) in docs.iter().enumerate() {
            idx.insert(i as u32, &terms(d));
        }
        let victim = victim % docs.len();
        let query: Vec<String> = (0..12).map(|t| format!("t{t}")).collect();
        let mut before = idx.score(&query, &|_| true);
        idx.remove(victim as u32);
        prop_assert!(idx.score(&query, &|_| true).iter().all(|h| h.0 != victim as u32));
        idx.insert(victim as u32, &terms(&docs[victim]));
        let mut after = idx.score(&query, &|_| true);
        before.sort_by_key(|h| h.0);
        after.sort_by_key(|h| h.0);
        prop_assert_eq!(before.len(), after.len());
        for (b, a) in before.iter().zip(&after) {
            prop_assert_eq!(b.0, a.0);
            prop_assert!((b.1 - a.1).abs() < 1e-4);
            prop_assert!(b.1 >= 0.0);
        }
    }
}

fn dedup(v: Vec<(u32, f32)>) -> Vec<(u32, f32)> {
    let mut seen = std::collections::HashSet::new();
    v.into_iter().filter(|(s, _)| seen.insert(*s)).collect()
}
