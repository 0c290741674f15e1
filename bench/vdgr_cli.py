"""Run the real ``vdgr`` CLI (index and batch query) as subprocesses."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

from bench.common import REPO, tree_hash



def vdgr_command() -> list[str]:
    """``.venv/bin/vdgr`` when installed, else ``python -m runners.cli`` in the repo."""
    exe = REPO / ".venv" / "bin" / "vdgr"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "runners.cli"]


def _env() -> dict:
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run(args: list[str], log: Path) -> tuple[int, float]:
    """Run ``vdgr ARGS`` in the repo root, stdout+stderr appended to ``log`` after a line naming
    the run; return (rc, seconds). Appended: a second build of an index being built is refused
    by the writer lock, and must not erase the running build's log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}\n")
        f.write("$ " + " ".join(vdgr_command() + args) + "\n")
        f.flush()
        rc = subprocess.call(vdgr_command() + args, cwd=REPO, env=_env(), stdout=f, stderr=subprocess.STDOUT)
    return rc, time.perf_counter() - t0


@lru_cache(maxsize=1)
def query_flags() -> frozenset:
    """The ``--flags`` that ``vdgr query --help`` lists (empty when the CLI is missing)."""
    p = subprocess.run(vdgr_command() + ["query", "--help"], cwd=REPO, env=_env(),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return frozenset()
    return frozenset(re.findall(r"(--[a-z][a-z0-9-]*)", p.stdout))


def supported(flags: list[str]) -> tuple[list[str], list[str]]:
    """Split config flags into (supported, dropped); a dropped option drops its value too."""
    known = query_flags()
    keep, dropped = [], []
    i = 0
    while i < len(flags):
        f = flags[i]
        has_value = i + 1 < len(flags) and not flags[i + 1].startswith("--")
        group = flags[i:i + 2] if has_value else [f]
        (keep if f in known else dropped).extend(group)
        i += len(group)
    return keep, dropped


def embedding_model_of(index_args: list[str]) -> str:
    """The model id (name, precision, call scheme) ``vdgr index ... index_args`` embeds with on
    this host: an index built with it elsewhere, an fp32 index on a bf16 host say, is built again."""
    import argparse

    from pipelines.run_build import with_precision
    from vdgr_core.embedding import embedder_identity
    from runners.index_cli import add_build_arguments, build_config

    parser = argparse.ArgumentParser()
    add_build_arguments(parser)
    args, _ = parser.parse_known_args(["corpus", "--index", "index", *index_args])
    return embedder_identity(with_precision(build_config(args)).embedding)[0]


def ensure_index(corpus: Path, index: Path, index_args: list[str], log: Path) -> dict:
    """Build ``index`` from ``corpus`` unless a committed index of the same corpus and
    arguments, index format and content rules is there already.

    Returns
    -------
    dict
        ``{"path", "reused", "build_s", "rc", "corpus_hash", "index_args"}``.

    Raises
    ------
    RuntimeError
        When ``vdgr index`` fails (see ``log``).
    """
    from vdgr_core.safety import content_rules
    from vdgr_core.store.domain_layout import FORMAT as LAYOUT_FORMAT
    from vdgr_core.store.manifest import FORMAT_VERSION
    from vdgr_core.store.tantivy_shard import SCHEMA_VERSION as SHARD_SCHEMA

    from schemas.config import BuildConfig

    # an index of an older format (manifest, layouts or BM25 shards), made under other content rules or
    # with other default build settings (a new setting such as title_entities) is built again
    defaults = BuildConfig(corpus="", index="").settings(content_rules())
    key = {"corpus_hash": tree_hash(corpus), "index_args": list(index_args),
           "embedding_model": embedding_model_of(index_args), "index_format": FORMAT_VERSION,
           "layout_format": LAYOUT_FORMAT, "shard_schema": SHARD_SCHEMA, "content_rules": content_rules(),
           "default_settings": hashlib.sha256(json.dumps(defaults, sort_keys=True).encode()).hexdigest()[:16]}
    stamp = index.parent / f"{index.name}.stamp.json"     # beside the index, not inside it
    info = {"path": str(index), **key}
    if (index / "manifest.json").exists() and stamp.exists():
        if json.loads(stamp.read_text(encoding="utf-8")) == key:
            return {**info, "reused": True, "build_s": None, "rc": 0}
    stamp.unlink(missing_ok=True)
    rc, secs = run(["index", str(corpus), "--index", str(index), *index_args], log)
    if rc != 0 or not (index / "manifest.json").exists():
        raise RuntimeError(f"vdgr index failed (rc={rc}); see {log}")
    stamp.write_text(json.dumps(key, indent=1), encoding="utf-8")
    return {**info, "reused": False, "build_s": round(secs, 1), "rc": rc}
