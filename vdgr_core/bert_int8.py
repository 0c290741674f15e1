"""int8 weight products for the plain-torch BERT encoder (``precision="int8"``).

The four products of each layer (query/key/value, attention output, the feed-forward pair) are
about 77% of a float32 pass. Here the first three (:data:`INT8_PRODUCTS`) run as uint8 x int8 ->
int32 matrix products in fbgemm (``quantized::linear_with_input_q_dq_qweight_dq_output_fp32``:
it quantizes the float rows while it packs them, multiplies in integers and scales the sums back
by each column's weight scale, in one call); the feed-forward output, embeddings, norms,
attention and GELU stay float32. Three choices keep the vectors reproducible and close to
float32:

- **Each activation row is quantized on its own**, asymmetrically: its midpoint and half-range
  map it onto [-1, 1], which fbgemm quantizes at one fixed step (1/:data:`ACTIVATION_QMAX`,
  zero point :data:`ZERO_POINT`). A row's integers depend on that row alone, never on the rows
  packed beside it, and no level is spent on values a row does not take.
- **Weights get 8 bits, activations 7** (:data:`WEIGHT_QMAX`, one scale per output column;
  :data:`ACTIVATION_QMAX`). x86 CPUs without VNNI multiply uint8 by int8 pairs with
  ``vpmaddubsw``, whose 16-bit partial sums saturate when both have 8 bits; with 2 x 127 x 127
  < 2^15 every integer sum is exact, whatever the instruction set, blocking or thread count.
  The bit goes to the weights because they carried most of the error: with 7-bit weights and
  8-bit activations, 300 EManual chunk texts were 1.21e-3 in mean cosine distance from float32,
  1.08e-3 of it with the weights alone quantized and 1.2e-4 with the activations alone; with
  8-bit weights and 7-bit activations, 6.9e-4 (max 1.3e-3 against 2.2e-3; hand runs).
- **Outlier channels are smoothed into the weights** (SmoothQuant, its published
  ``alpha = 0.5``): input channel ``k`` is divided by ``s_k`` and weight column ``k`` multiplied
  by it, ``s_k = sqrt(peak_k / max|W_k|)`` rounded to a power of two (so the division is exact).
  ``peak_k`` is channel ``k``'s largest input magnitude over :data:`CALIBRATION_TEXTS`, a fixed
  set of sentences, in float32: the factors are a function of the model alone.

Until model id scheme ``packed1-int8v2`` the products ran in ``torch._int_mm`` (oneDNN) with
7-bit weights and 8-bit activations; the torch passes that quantized each row and converted
the sums back took most of the integer product's gain on an AVX2-only core, and fbgemm uses
VNNI where the CPU has it. Speed and retrieval quality: BENCHMARKS.md, blocks ``embed`` and
``precision``; docs/DECISIONS.md.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import torch

from schemas.errors import ConfigError
from vdgr_core.bert_encoder import BertEncoder

#: weight levels each side of zero: 8 bits
WEIGHT_QMAX = 127
#: activation levels each side of a row's midpoint: 7 bits, so that no 16-bit partial sum of
#: two uint8 x int8 products saturates without VNNI (2 x 127 x 127 < 2^15)
ACTIVATION_QMAX = 63
#: the uint8 level of a row's midpoint: a row takes levels 1 to 127
ZERO_POINT = 64
#: SmoothQuant's migration strength: 0 leaves the activations alone, 1 moves all to the weights
SMOOTHING_ALPHA = 0.5
#: the products run in int8, by their name within a layer. The feed-forward output's input is
#: GELU's, heavy-tailed: in int8 it carried half the vectors' error (300 EManual chunk texts,
#: mean cosine distance to float32: 1.5e-3 with it, 6.9e-4 without), so it stays float32
INT8_PRODUCTS = ("attention.self.qkv", "attention.output.dense", "intermediate.dense")
#: a half-range below this is a constant row: all its levels are 0, its midpoint carries it
_FLAT = 1e-30

#: the sentences the smoothing factors are measured on: manual steps, specifications, reference
#: prose, commands and short labels, so every product's inputs take their usual range
CALIBRATION_TEXTS = (
    "To reset the device to factory settings, hold the power and volume down keys for 10 seconds.",
    "Settings > Connections > Wi-Fi: tap the network name, enter the password and tap Connect.",
    "Warning: do not expose the battery to temperatures above 60 °C (140 °F).",
    "The scheduler assigns each radio bearer a priority between 1 and 15; lower values run first.",
    "Table 4-2 lists the supported frequency bands, output power and receiver sensitivity.",
    "Run `sudo systemctl restart nginx` and check the log with `journalctl -u nginx --since today`.",
    "The river rises in the northern highlands and flows 1,200 kilometres to the sea.",
    "She was elected to parliament in 1987 and served as minister of education until 1994.",
    "If the light blinks amber, the firmware update failed; disconnect the cable and try again.",
    "Parameters: timeout (int, seconds, default 30) - how long a request may take before it fails.",
    "Battery",
    "Release notes, version 2.4.1: fixed a crash when the SD card was removed during playback.",
    "The album was recorded in London and reached number three on the national chart.",
    "Press and hold the Side key, then drag the slider to power off the phone.",
    "Error 0x80070005: access is denied. Run the installer as an administrator.",
    "Each cell reports its load every 200 ms; a handover starts when the neighbour's signal is 3 dB stronger.",
    "Chapter 7. Troubleshooting",
    "The museum holds over 40,000 objects, from ancient pottery to modern photography.",
    "Clean the lens with a soft, dry cloth. Do not use alcohol, solvents or abrasive cleaners.",
    "def parse(path): return json.loads(Path(path).read_text())",
)


@dataclass(frozen=True)
class Int8Weight:
    """One product's weight, ready for :func:`int8_linear`.

    ``q``: int8, shape (out, in), at most :data:`WEIGHT_QMAX` in magnitude; ``scale``: float
    per output column; ``inv_smooth``: what each input channel is multiplied by (powers of two);
    ``column_sum``: the dequantized weight summed over inputs, per output column (carries each
    row's midpoint); ``packed``: ``q`` and ``scale`` packed for fbgemm."""

    q: torch.Tensor
    scale: torch.Tensor
    inv_smooth: torch.Tensor
    column_sum: torch.Tensor
    packed: object


def quantize_weight(weight: torch.Tensor, input_peak: torch.Tensor) -> Int8Weight:
    """A float ``(out, in)`` weight, smoothed against its inputs' per-channel ``input_peak``."""
    tiny = torch.finfo(torch.float32).tiny
    ratio = (input_peak.clamp(min=tiny) ** SMOOTHING_ALPHA
             / weight.abs().amax(dim=0).clamp(min=tiny) ** (1 - SMOOTHING_ALPHA))
    smooth = torch.exp2(torch.round(torch.log2(ratio)))
    smoothed = weight * smooth
    scale = smoothed.abs().amax(dim=1).clamp(min=tiny) / WEIGHT_QMAX
    q = torch.round(smoothed / scale[:, None]).to(torch.int8)
    return Int8Weight(q, scale, 1.0 / smooth, (q.float() * scale[:, None]).sum(dim=1), _pack(q, scale))


def _pack(q: torch.Tensor, scale: torch.Tensor) -> object:
    """``q`` (out, in) with its column scales, packed for fbgemm's products.

    torch 2.13 marks its quantized tensors deprecated (they move to torchao); the pinned torch
    has them, and a torch without them gets a clear error, not other vectors.
    """
    if "fbgemm" not in torch.backends.quantized.supported_engines or not hasattr(
            torch.ops.quantized, "linear_with_input_q_dq_qweight_dq_output_fp32"):
        raise ConfigError("int8 embeddings need torch's fbgemm kernels (an x86 build of torch "
                          "with its quantized operators); use --embedding-precision fp32")
    engine = torch.backends.quantized.engine
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
        weight = torch.quantize_per_channel(q.float() * scale[:, None], scale.double(),
                                            torch.zeros(q.shape[0], dtype=torch.long), 0, torch.qint8)
    torch.backends.quantized.engine = "fbgemm"      # the packing chooses the kernels
    try:
        return torch.ops.quantized.linear_prepack(weight, None)
    finally:
        torch.backends.quantized.engine = engine


def int8_linear(x: torch.Tensor, weight: Int8Weight, bias: torch.Tensor) -> torch.Tensor:
    """``x @ W.T + bias`` with ``W`` from :func:`quantize_weight`, each row of ``x`` in int8.

    The product is summed in int32 (exact) and scaled back with the column's and the row's
    scales: a row's result is the same bits whatever rows surround it.
    """
    lead, width = x.shape[:-1], x.shape[-1]
    rows = x.reshape(-1, width) * weight.inv_smooth
    hi, lo = rows.amax(dim=1, keepdim=True), rows.amin(dim=1, keepdim=True)
    mid = (hi + lo).mul_(0.5)
    half = hi.sub_(lo).mul_(0.5).clamp_(min=_FLAT)
    unit = rows.sub_(mid).div_(half)                                  # each row in [-1, 1]
    out = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(
        unit, 1.0 / ACTIVATION_QMAX, ZERO_POINT, weight.packed)
    out = torch.addcmul(bias, out, half).addr_(mid.view(-1), weight.column_sum)
    return out.reshape(*lead, -1)


class _InputPeaks(BertEncoder):
    """The float encoder, recording each product's largest input magnitude per channel."""

    def __init__(self, encoder: BertEncoder):
        self.__dict__.update(encoder.__dict__)
        self.peaks: dict[str, torch.Tensor] = {}

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        if name.split(".", 3)[3] in INT8_PRODUCTS:
            peak = x.reshape(-1, x.shape[-1]).abs().amax(dim=0)
            self.peaks[name] = torch.maximum(self.peaks[name], peak) if name in self.peaks else peak
        return super()._linear(x, name)


class Int8BertEncoder(BertEncoder):
    """A :class:`~vdgr_core.bert_encoder.BertEncoder` whose weight products run in int8.

    Parameters
    ----------
    encoder : BertEncoder
        The float encoder; its weights are shared, not copied.
    calibration_ids : sequence of token id lists
        :data:`CALIBRATION_TEXTS` tokenized by the model's tokenizer: the float pass over them
        gives each product's per-channel input peaks (about 0.2 s).
    """

    def __init__(self, encoder: BertEncoder, calibration_ids: Sequence[Sequence[int]]):
        self.__dict__.update(encoder.__dict__)
        recorder = _InputPeaks(encoder)
        with torch.inference_mode():
            for ids in calibration_ids:
                recorder.packed(torch.tensor(list(ids), dtype=torch.long), [(0, len(ids))])
        self.quantized = {name: quantize_weight(self.w[f"{name}.weight"], peak)
                          for name, peak in recorder.peaks.items()}

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        weight = self.quantized.get(name)
        if weight is None:
            return super()._linear(x, name)
        return int8_linear(x, weight, self.w[f"{name}.bias"])


__all__ = ["ACTIVATION_QMAX", "CALIBRATION_TEXTS", "INT8_PRODUCTS", "Int8BertEncoder", "Int8Weight",
           "SMOOTHING_ALPHA", "WEIGHT_QMAX", "ZERO_POINT", "int8_linear", "quantize_weight"]
