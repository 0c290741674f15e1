"""A BERT encoder in plain torch, loaded from a sentence-transformers folder.

all-MiniLM-L6-v2 is a 6-layer BERT. Running it through ``transformers`` means importing that
package (~2 s in every process that embeds, more than the model's own load); this module does the
same forward pass with a dozen torch operations, the ``tokenizers`` library and the folder's
``model.safetensors``. tests/vdgr_core/test_bert_encoder.py checks it against ``transformers``.
``vdgr_core.bert_int8`` runs the same pass with its weight products in int8.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F

from schemas.errors import ConfigError

_ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu,
                "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


class BertEncoder:
    """Token ids -> last hidden states of a BERT checkpoint (inference only).

    Parameters
    ----------
    folder : Path
        Holds ``config.json`` (a ``bert`` model) and ``model.safetensors``.
    """

    def __init__(self, folder: Path):
        from safetensors.torch import load_file

        cfg = json.loads((folder / "config.json").read_text())
        if cfg.get("model_type", "bert") != "bert" or cfg.get("hidden_act", "gelu") not in _ACTIVATIONS:
            raise ConfigError(f"{folder}: not a BERT model this encoder can run "
                              f"({cfg.get('model_type')}, {cfg.get('hidden_act')})")
        self.hidden_size = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.act = _ACTIVATIONS[cfg.get("hidden_act", "gelu")]
        weights = load_file(str(folder / "model.safetensors"))
        # checkpoints saved from BertModel have no prefix, from BertFor... a "bert." one
        self.w = {k[len("bert."):] if k.startswith("bert.") else k: v for k, v in weights.items()}
        missing = [k for k in ("embeddings.word_embeddings.weight", f"encoder.layer.{self.layers - 1}.output.dense.weight")
                   if k not in self.w]
        if missing:
            raise ConfigError(f"{folder}: model.safetensors lacks {missing}")
        # query, key and value as one matrix product per layer: a third as many, wider, calls
        # (about 7% faster on 2 cores; the same bits as three products, tested)
        for i in range(self.layers):
            p = f"encoder.layer.{i}.attention.self"
            for part in ("weight", "bias"):
                self.w[f"{p}.qkv.{part}"] = torch.cat([self.w.pop(f"{p}.{n}.{part}")
                                                       for n in ("query", "key", "value")]).contiguous()

    def _ln(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, (self.hidden_size,), self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps)

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    def _embeddings(self, input_ids: torch.Tensor, positions: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
        w = self.w
        x = (F.embedding(input_ids, w["embeddings.word_embeddings.weight"])
             + F.embedding(positions, w["embeddings.position_embeddings.weight"])
             + F.embedding(token_type_ids, w["embeddings.token_type_embeddings.weight"]))
        return self._ln(x, "embeddings.LayerNorm")

    def _after_attention(self, x: torch.Tensor, ctx: torch.Tensor, p: str) -> torch.Tensor:
        """The rest of layer ``p`` once its attention context ``ctx`` is known: output
        projection, residual and norm, feed-forward, residual and norm (row by row)."""
        x = self._ln(x + self._linear(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        ff = self._linear(self.act(self._linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense")
        return self._ln(x + ff, f"{p}.output.LayerNorm")

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 token_type_ids: torch.Tensor) -> torch.Tensor:
        """Last hidden states, shape (batch, tokens, hidden)."""
        batch, length = input_ids.shape
        x = self._embeddings(input_ids, torch.arange(length).unsqueeze(0), token_type_ids)
        keep = attention_mask.bool()[:, None, None, :]          # (batch, 1, 1, tokens)
        if bool(keep.all()):
            keep = None                                          # no padding: no mask needed
        head = self.hidden_size // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            qkv = self._linear(x, f"{p}.attention.self.qkv").view(batch, length, 3, self.heads, head)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)                  # each (batch, heads, tokens, head)
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            ctx = ctx.transpose(1, 2).reshape(batch, length, self.hidden_size)
            x = self._after_attention(x, ctx, p)
        return x

    def packed(self, input_ids: torch.Tensor, segments: Sequence[tuple[int, int]]) -> torch.Tensor:
        """Last hidden states of texts packed end to end into one sequence of rows.

        Parameters
        ----------
        input_ids : torch.Tensor
            Shape (rows,): the texts' token ids one after another; rows after the last
            segment are filler (any id) and come back as unspecified rows.
        segments : sequence of (start, end)
            Each text's rows, in order, not overlapping.

        Returns
        -------
        torch.Tensor
            Shape (rows, hidden). Every product with the weights is one (rows, hidden) matrix
            product, so no row is padding of another text; attention runs within each segment
            alone (adjacent texts of one token count share one call, as a batch). A row depends
            only on its own text whatever the rows around it, as long as the number of rows is
            the same.
        """
        rows = input_ids.shape[0]
        positions = torch.zeros(rows, dtype=torch.long)
        runs: list[list[int]] = []                 # [start, texts, tokens each]: adjacent, equal
        for a, b in segments:
            positions[a:b] = torch.arange(b - a)
            last = runs[-1] if runs else None
            if last and last[2] == b - a and last[0] + last[1] * last[2] == a:
                last[1] += 1
            else:
                runs.append([a, 1, b - a])
        x = self._embeddings(input_ids, positions, torch.zeros_like(input_ids))
        head = self.hidden_size // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            qkv = self._linear(x, f"{p}.attention.self.qkv")
            ctx = torch.zeros(rows, self.hidden_size, dtype=qkv.dtype)
            for start, texts, n in runs:                     # a run's rows as (texts, n) views
                end = start + texts * n
                q, k, v = qkv[start:end].view(texts, n, 3, self.heads, head).permute(2, 0, 3, 1, 4)
                out = F.scaled_dot_product_attention(q, k, v)         # (texts, heads, n, head)
                ctx[start:end].view(texts, n, self.heads, head).copy_(out.transpose(1, 2))
            x = self._after_attention(x, ctx, p)
        return x


def load_tokenizer(folder: Path, max_length: int):
    """The folder's fast tokenizer (``tokenizer.json``), truncating and padding like transformers."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    cfg_path = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text()) if cfg_path.is_file() else {}
    limit = min(max_length, int(cfg.get("model_max_length", max_length) or max_length))
    tok.enable_truncation(max_length=limit)
    pad = cfg.get("pad_token", "[PAD]")
    tok.enable_padding(pad_id=tok.token_to_id(pad), pad_token=pad)
    return tok


__all__ = ["BertEncoder", "load_tokenizer"]
