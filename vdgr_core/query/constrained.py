"""Pydantic response models whose label fields only accept the real labels (built at runtime).

An LLM answer naming a label outside the set fails validation, so it can never reach the
retrieval code; the caller falls back to its offline decision.
"""
from __future__ import annotations

import re
from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _literal(labels: Sequence[str]):
    if not labels:
        raise ValueError("a constrained label needs at least one allowed value")
    return Literal[tuple(labels)]  # type: ignore[valid-type]


def _name(base: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", base)


def choice_model(name: str, field: str, labels: Sequence[str], *, with_reason: bool = True) -> type[BaseModel]:
    """A model ``{field: one of labels, reason: str}``."""
    fields = {field: (_literal(labels), ...)}
    if with_reason:
        fields["reason"] = (str, Field(default="", max_length=2000))
    return create_model(_name(name), __base__=_Strict, **fields)


def selection_model(name: str, field: str, labels: Sequence[str], *, extra: dict | None = None) -> type[BaseModel]:
    """A model ``{field: list of labels (subset), **extra}``."""
    fields = {field: (list[_literal(labels)], ...)}
    fields.update(extra or {})
    return create_model(_name(name), __base__=_Strict, **fields)


def scores_model(name: str, labels: Sequence[str]) -> type[BaseModel]:
    """A model ``{scores: [{label: one of labels, score: 0..10}]}`` for re-ranking."""
    item = create_model(_name(name + "Item"), __base__=_Strict,
                        label=(_literal(labels), ...), score=(float, Field(ge=0, le=10)))
    return create_model(_name(name), __base__=_Strict, scores=(list[item], ...))
