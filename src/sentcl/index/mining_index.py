"""Hard negatives mined from a built index (``sentcl mine --index``: a faiss folder or a store).

The candidates are the index's corpus, searched with the anchors' embeddings (``open_index``'s protocol:
``search``, ``texts``) instead of the pairs' own positives: the corpus is whatever the index holds. An anchor's
positives are recognised among its candidates by their text, as is a candidate equal to the anchor's text;
the positive score p of the filters is the cosine of the anchor with its own positives (encoded here, in the
index or not). Then the selection of ``sentcl.index.mining`` (steps 2-5 of its module doc), with its pool of
``range_max + max_positives`` candidates (+1 for an anchor whose own text turns up).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.index.mining import MiningSettings, assemble, choose
from sentcl.similarity import unit_rows


def mine_pairs_in_index(
    model: Any,
    model_name: str,
    pairs: list[tuple[int, str, str]],
    settings: MiningSettings,
    index: Any,
    batch_size: int = ENCODE_BATCH_SIZE,
    max_length: int | None = None,
) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """(anchor, positive, hard negative) triples for the pairs, in input order, and statistics (as
    ``mine_pairs``); the encoder must be the index's (``check_encoder``: one line naming what differs)."""
    index.check_encoder(model_name, model, max_length)
    wanted: dict[str, list[str]] = {}
    for _, anchor, positive in pairs:
        if positive not in wanted.setdefault(anchor, []):
            wanted[anchor].append(positive)
    anchor_texts = list(wanted)
    positive_texts = list(dict.fromkeys(p for ps in wanted.values() for p in ps))
    if len(index) < 2:
        raise ValueError(f"{index.folder} holds fewer than 2 texts: nothing to mine negatives from")
    max_pos = max(len(p) for p in wanted.values())
    _, range_max = settings.window(max_pos)
    pool = range_max + max_pos
    k = min(pool + 1, len(index))
    emb_a = unit_rows(np.asarray(model.encode(anchor_texts, batch_size=batch_size, max_length=max_length)))
    emb_p = unit_rows(np.asarray(model.encode(positive_texts, batch_size=batch_size, max_length=max_length)))
    row_of = {t: i for i, t in enumerate(positive_texts)}
    scores, ids = index.search(emb_a, k)  # (Q, k), (Q, k)
    found = sorted({int(i) for i in ids.reshape(-1) if i >= 0})
    text_of = dict(zip(found, index.texts(found), strict=True))
    positives: list[list[int]] = []
    in_corpus: list[int | None] = []
    pos_scores: list[float] = []
    for q, anchor in enumerate(anchor_texts):
        mine = set(wanted[anchor])
        hits = [int(i) for i in ids[q] if i >= 0]
        positives.append([i for i in hits if text_of[i] in mine])
        in_corpus.append(next((i for i in hits if text_of[i] == anchor), None))
        pos_scores.append(float(min(emb_a[q] @ emb_p[row_of[p]] for p in wanted[anchor])))
    own = [settings.exclude_anchor and found_q is not None for found_q in in_corpus]
    neg_ids, _, removed = choose(scores, ids, positives, pos_scores, settings, pool, own, in_corpus)
    order = {a: q for q, a in enumerate(anchor_texts)}
    triples, stats = assemble(pairs, order, neg_ids, text_of, settings, removed)
    stats["corpus"] = len(index)
    return triples, stats
