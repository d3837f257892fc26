//! Write cost of the SQLite store on a temporary file in WAL mode:
//! - `single_turn`: one batch of one turn + its memory + one 384-dim vector (the per-message
//!   ingest path), with `synchronous=NORMAL` (default) and `FULL`;
//! - `bulk_1000`: one batch of 1000 turns + 1000 memories + 1000 384-dim vectors (dataset
//!   import), reported as turns per second.

// Measurement code: a failed setup step ends the run with its message.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use mnemos_core::MemoryWrite;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mnemos_core::{
    Memory, Metadata, Moment, Role, Scope, Timestamp, Turn, TurnId, VectorRow, WriteBatch,
};
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

const DIM: usize = 384;
static ROUND: AtomicU64 = AtomicU64::new(0);

fn batch(turns: usize) -> WriteBatch {
    let scope = Scope {
        tenant: "bench".into(),
        user: "user".into(),
        agent: "agent".into(),
        session: "s".into(),
    };
    let mut batch = WriteBatch::default();
    for _ in 0..turns {
        let round = ROUND.fetch_add(1, Ordering::Relaxed);
        let turn = Turn {
            id: TurnId::new(),
            scope: scope.clone(),
            role: if round.is_multiple_of(2) { Role::User } else { Role::Assistant },
            speaker: None,
            text: format!("round {round}: I went hiking near the lake yesterday and saw a heron, 昨天去湖边徒步。"),
            at: Moment { round, time: Timestamp(1_750_000_000_000 + round as i64 * 1_000) },
            metadata: Metadata::new(),
            key: None,
        };
        let memory = Memory::from_turn(&turn);
        let vector = (0..DIM)
            .map(|i| ((i as u64 * 7 + round) % 101) as f32 / 101.0)
            .collect();
        batch.vectors.push(VectorRow {
            memory_id: memory.id,
            model: "minilm".into(),
            vector,
        });
        batch.memories.push(memory);
        batch.turns.push(turn);
    }
    batch
}

fn open(dir: &tempfile::TempDir, synchronous_full: bool) -> SqliteStore {
    let options = SqliteOptions {
        synchronous_full,
        ..Default::default()
    };
    match SqliteStore::open(&dir.path().join("bench.db"), options) {
        Ok(store) => store,
        Err(e) => panic!("open: {e}"),
    }
}

fn write(store: &SqliteStore, batch: WriteBatch) {
    if let Err(e) = store.write(black_box(batch)) {
        panic!("write: {e}");
    }
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("single_turn");
    group.throughput(Throughput::Elements(1));
    for (name, full) in [("wal_normal", false), ("wal_full", true)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = open(&dir, full);
        group.bench_function(name, |b| {
            b.iter_batched(|| batch(1), |bt| write(&store, bt), BatchSize::SmallInput)
        });
    }
    group.finish();

    let mut group = c.benchmark_group("bulk_1000");
    group.throughput(Throughput::Elements(1000));
    group.sample_size(20);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&dir, false);
    group.bench_function("wal_normal", |b| {
        b.iter_batched(
            || batch(1000),
            |bt| write(&store, bt),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

// No plots: criterion's plotters backend is built with the workspace's `ab_glyph` text feature
// (the evaluation charts'), which only knows fonts registered at run time; criterion registers
// none, so its first chart panics with `FontUnavailable`. The numbers are all we read.
criterion_group! {
    name = write_benches;
    config = Criterion::default().without_plots();
    targets = benches
}
criterion_main!(write_benches);
