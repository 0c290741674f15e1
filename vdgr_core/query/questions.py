"""The JSONL question reader of ``vdgr query --questions FILE``.

One JSON object per line, ``{"id", "question", optional "domain", "version", "groups"}``
(:class:`~vdgr_core.query.knowledge_base.QueryItem`); blank lines are skipped. Any input ends as
a list of questions or a :class:`QuestionFileError` naming the line and what is wrong with it
(not UTF-8, not JSON, not an object, a missing or mistyped field); no other exception escapes.
"""
from __future__ import annotations

import json
from typing import BinaryIO, Iterable, Union

from pydantic import ValidationError

from schemas.errors import QuestionFileError
from vdgr_core.query.knowledge_base import QueryItem


def parse_question_line(line: Union[bytes, str], where: str = "line") -> QueryItem:
    """Parse one non-blank line of a question file.

    Raises
    ------
    QuestionFileError
        When the line is not UTF-8, not a JSON object, or not a valid question.
    """
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise QuestionFileError(f"{where}: not UTF-8 ({e.reason} at byte {e.start})") from None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as e:     # RecursionError: absurdly nested JSON
        raise QuestionFileError(f"{where}: not JSON ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(data, dict):
        raise QuestionFileError(f"{where}: a question is a JSON object, not {type(data).__name__}")
    try:
        return QueryItem.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'value'}: {err['msg']}"
                             for err in e.errors()[:5])
        raise QuestionFileError(f"{where}: not a question ({problems})") from None


def read_questions(lines: Union[BinaryIO, Iterable[Union[bytes, str]]], source: str = "questions") -> list[QueryItem]:
    """Every question of a JSONL file (opened in binary mode, or any iterable of lines).

    Raises
    ------
    QuestionFileError
        For the first line that is not a question, naming ``source`` and the line number.
    """
    items = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        items.append(parse_question_line(line, f"{source}, line {number}"))
    return items


__all__ = ["parse_question_line", "read_questions"]
