"""Names vulture cannot see used: frameworks call them, or readers outside the package folders
read them. ``tests/test_dead_code.py`` runs::

    vulture pipelines vdgr_core transforms schemas runners tests/support/vulture_whitelist.py \
        --min-confidence 60

A name belongs here only when something outside our Python calls or reads it; code that only
tests use is deleted instead.
"""
# ruff: noqa
# flake8: noqa
_ = object()

# Beam calls these on DoFns, CombineFns and Coders
_.setup, _.start_bundle, _.process, _.finish_bundle, _.teardown
_.merge_accumulators, _.extract_output, _.get_accumulator_coder
_.is_deterministic, _.to_type_hint
# pydantic reads model_config and runs the decorated validators
_.model_config, _._not_blank, _._unique, _._legacy_bf16, _._route_names, _._retired
# FastAPI routes and MCP tools, registered by their decorators
_.index_page, _.page_script, _.page_style, _.healthz, _.prometheus, _.models
_.search_tool, _.fetch_tool
# query routes, registered by @register (vdgr_core/query/routes/base.py)
_.Bm25Route, _.DenseRoute, _.HybridRoute, _.TocRoute, _.GraphWalkRoute
# attributes the libraries read: Starlette's router and app state, numpy's flags
_.redirect_slashes, _.service, _.writeable
# fields of records read by name when serialized: manifest.json, query JSON, LLM usage
_.created_at, _.section_id, _.cache_hits, _.retries
# used by bench/: the LLM-judged scores (bench_llm.py) and the splitter (bench_embed.py)
_.answer_relevance, _.context_precision, _.context_recall, _.split_text
