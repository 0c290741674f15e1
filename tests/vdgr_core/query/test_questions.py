"""The JSONL question reader: any input ends as questions or a QuestionFileError naming the line."""
from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from schemas.errors import QuestionFileError
from tests.support.fuzz import FUZZ, watchdog
from vdgr_core.query.knowledge_base import QueryItem
from vdgr_core.query.questions import read_questions


def test_reads_questions_and_skips_blank_lines():
    lines = [b'{"id": "a", "question": "q1", "groups": ["hr"]}\n', b"\n", b'{"question": "q2", "extra": 1}\n']
    items = read_questions(lines)
    assert [(i.id, i.question, i.groups) for i in items] == [("a", "q1", ["hr"]), (None, "q2", [])]


@pytest.mark.parametrize("line, why", [(b"\xff{}", "not UTF-8"), (b"{", "not JSON"), (b"[1]", "JSON object"),
                                       (b'{"id": "x"}', "question"), (b'{"question": 3}', "question")])
def test_a_bad_line_is_a_typed_error_naming_it(line, why):
    with pytest.raises(QuestionFileError, match=f"q.jsonl, line 2: .*{why}"):
        read_questions([b'{"question": "ok"}', line], "q.jsonl")


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
                           max_leaves=12)
question_like = st.fixed_dictionaries({}, optional={"id": json_values, "question": json_values,
                                                    "domain": json_values, "version": json_values,
                                                    "groups": json_values})


@FUZZ
@given(lines=st.lists(st.one_of(st.binary(max_size=80), st.text(max_size=80).map(str.encode),
                                question_like.map(lambda d: json.dumps(d).encode()),
                                json_values.map(lambda v: json.dumps(v).encode())), max_size=6))
@example(lines=[b"[" * 100000])
def test_any_question_file_gives_questions_or_a_typed_error(lines):
    with watchdog():
        try:
            items = read_questions(lines)
        except QuestionFileError as e:
            assert "line " in str(e)
            return
    assert all(isinstance(i, QueryItem) and isinstance(i.question, str) for i in items)
