"""Prometheus metrics of the service (``GET /metrics``, text format).

One registry per application (tests start several). Exported:

- ``vdgr_requests_total{endpoint, status}`` and ``vdgr_request_seconds{endpoint}`` (a histogram
  of the time until the response starts; a streamed answer is timed to its last event by
  ``vdgr_stream_seconds``);
- ``vdgr_llm_calls_total{stage}`` and ``vdgr_llm_tokens_total{stage}``: LLM requests and tokens
  spent answering, per stage (router, TOC selection, reflection, answer, streamed answer);
- ``vdgr_llm_failures_total{stage}``: LLM requests that ended in a fallback;
- ``vdgr_index_build_info{build_id}`` (1 for the build being served) and
  ``vdgr_index_reloads_total``;
- ``vdgr_refused_requests_total{reason}``: requests refused before a route ran
  (:mod:`runners.serve.guard`): ``auth_failed`` (401), ``auth_blocked`` (429, the client
  address's failed-authentication budget is spent), ``rate_limited`` (429, the key's limit),
  ``body_too_large`` (413), ``body_timeout`` (408), ``bad_body`` (400: a ``Content-Length``
  that is no number, a JSON body not UTF-8 or nested too deeply), ``bad_host`` (400, a
  ``Host`` not in ``--allowed-hosts``), ``bad_forwarded`` (400, a trusted proxy's two
  forwarding headers name different clients).
"""
from __future__ import annotations

from typing import Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

REFUSALS = ("auth_failed", "auth_blocked", "rate_limited", "body_too_large", "body_timeout", "bad_body", "bad_host",
            "bad_forwarded")
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServiceMetrics:
    """The metric objects of one application."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("vdgr_requests", "HTTP requests answered", ["endpoint", "status"], registry=r)
        self.latency = Histogram("vdgr_request_seconds", "Time until the response starts",
                                 ["endpoint"], buckets=BUCKETS, registry=r)
        self.stream = Histogram("vdgr_stream_seconds", "Duration of streamed answers", buckets=BUCKETS,
                                registry=r)
        self.llm_calls = Counter("vdgr_llm_calls", "LLM requests sent", ["stage"], registry=r)
        self.llm_tokens = Counter("vdgr_llm_tokens", "LLM tokens (prompt + completion)", ["stage"], registry=r)
        self.llm_failures = Counter("vdgr_llm_failures", "LLM requests that fell back", ["stage"], registry=r)
        self.build = Gauge("vdgr_index_build_info", "The index build being served", ["build_id"], registry=r)
        self.reloads = Counter("vdgr_index_reloads", "New index builds picked up", registry=r)
        self.refused = Counter("vdgr_refused_requests", "Requests refused before a route ran", ["reason"],
                               registry=r)
        for reason in REFUSALS:          # exported at 0 from the start
            self.refused.labels(reason=reason)

    def serving(self, build_id: str, reload: bool) -> None:
        """Record the build now served."""
        self.build.clear()
        self.build.labels(build_id=build_id).set(1)
        if reload:
            self.reloads.inc()

    def add_llm_usage(self, before: Mapping, after: Mapping) -> None:
        """Add the per-stage difference of two ``LLMClient.usage()`` snapshots."""
        for stage, u in after.items():
            b = before.get(stage)
            calls = u.calls - (b.calls if b else 0)
            tokens = (u.prompt_tokens + u.completion_tokens) - ((b.prompt_tokens + b.completion_tokens) if b else 0)
            failures = u.failures - (b.failures if b else 0)
            if calls:
                self.llm_calls.labels(stage=stage).inc(calls)
            if tokens:
                self.llm_tokens.labels(stage=stage).inc(tokens)
            if failures:
                self.llm_failures.labels(stage=stage).inc(failures)

    def render(self) -> bytes:
        return generate_latest(self.registry)
