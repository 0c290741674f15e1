"""BuildConfig's slices: only the entry points take the whole configuration; each component
takes its frozen slice; the flags, the JSON and the recorded settings are what they were."""
from __future__ import annotations

import ast
import dataclasses
import pathlib

import pytest

from schemas.config import BuildConfig, BuildSlices, LLMConfig

REPO = pathlib.Path(__file__).resolve().parents[2]

#: the functions that may take the whole BuildConfig: the entry points of a build and an update
#: and the pipeline constructors (file, function); everything else takes its slice
ENTRY_POINTS = {
    ("pipelines/run_build.py", "run_build"), ("pipelines/run_build.py", "execute_build"),
    ("pipelines/run_build.py", "with_precision"),        # makes the entry point's config concrete
    ("schemas/config.py", "check_settings"),             # compares all of its recorded settings
    ("pipelines/run_update.py", "run_update"), ("pipelines/run_update.py", "_update_locked"),
    ("pipelines/delta_update.py", "apply_document_delta"),
    ("pipelines/build.py", "build_pipeline"), ("pipelines/delta_build.py", "changed_documents_pipeline"),
    ("pipelines/watch.py", "run_watch"), ("pipelines/watch.py", "__init__"),   # an update per poll
}


def _takers() -> set[tuple[str, str]]:
    out = set()
    for root in ("pipelines", "transforms", "vdgr_core", "runners", "schemas"):
        for path in (REPO / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                    if any(a.annotation is not None and "BuildConfig" in ast.unparse(a.annotation) for a in args):
                        out.add((str(path.relative_to(REPO)), node.name))
    return out


def test_only_the_entry_points_take_the_whole_build_config():
    assert _takers() <= ENTRY_POINTS, sorted(_takers() - ENTRY_POINTS)


def test_every_dofn_and_component_of_the_build_takes_a_slice():
    """The build's transforms and the update's row steps name slices, never BuildConfig."""
    for rel in ("transforms/parse.py", "transforms/documents.py", "transforms/directories.py",
                "transforms/embed.py", "pipelines/delta_rows.py", "pipelines/commit.py",
                "vdgr_core/indexing/document.py", "vdgr_core/indexing/annotate.py",
                "vdgr_core/indexing/model_home.py", "runners/early_embedder.py"):
        assert "BuildConfig" not in (REPO / rel).read_text(encoding="utf-8"), rel


def test_slices_are_frozen_and_follow_the_fields():
    config = BuildConfig(corpus="c", index="i", summary_max_chars=300, max_entities_per_chunk=7,
                         llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="m"))
    slices = config.slices
    assert isinstance(slices, BuildSlices)
    assert slices.annotate.max_terms == 7 and slices.annotate.summary_max_chars == 300
    assert slices.summaries.max_chars == 500 and slices.summaries.llm == config.llm
    assert slices.parse.limits == config.limits == slices.limits and slices.parse.chunking == config.chunking
    assert slices.embed.embedding == config.embedding and slices.embed.index == "i"
    assert slices.store is config.store
    with pytest.raises(dataclasses.FrozenInstanceError):
        slices.annotate.max_terms = 3
    changed = config.model_copy(update={"title_entities": False})
    assert changed.slices.annotate.title_entities is False and config.slices.annotate.title_entities is True


def test_flags_json_and_recorded_settings_are_unchanged():
    from runners.cli import make_parser
    from runners.index_cli import build_config

    args, _ = make_parser().parse_known_args(["index", "corpus", "--index", "idx", "--embedding", "hashing",
                                      "--chunk-tokens", "48", "--overlap-tokens", "3"])
    config = build_config(args)
    assert (config.chunking.max_tokens, config.chunking.overlap_tokens, config.embedding.kind) == (48, 3, "hashing")
    # the JSON and the manifest's recorded settings name the flat fields, as before the slices
    assert BuildConfig.model_validate_json(config.model_dump_json()) == config
    settings = config.settings("rules")
    assert {"chunking", "embedding", "limits", "store", "summary_sentences", "summary_max_chars",
            "max_entities_per_chunk", "title_entities", "content_rules"} <= set(settings)
    assert "slices" not in settings
    assert BuildConfig.from_settings(settings, corpus="corpus", index="idx").settings("rules") == settings
