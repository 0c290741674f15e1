"""Pass 2 of document masking: every text field of a parsed document, cleared in one scan."""
import dataclasses

import pytest

from schemas.records import ParsedDocument, Section
from vdgr_core.indexing.mask import mask_parsed

SECRET = "Zq8!vLm3pX"


def _doc(**where) -> ParsedDocument:
    section = Section(title=where.get("title", "Setup"), level=1,
                      heading_path=where.get("path", ("Guide", "Setup")),
                      text=where.get("text", "Press the Power button."))
    return ParsedDocument(title=where.get("doc_title", "Guide"), sections=(section,),
                          metadata=where.get("meta", (("owner", "ops"),)))


def test_a_document_without_triggers_comes_back_as_it_was():
    doc = _doc()
    masked, findings = mask_parsed(doc, raw_text="whatever")
    assert masked is doc and findings == ()


@pytest.mark.parametrize("where", [
    {"text": f"Then the password is {SECRET} for the console."},
    {"title": f"password: {SECRET}"},
    {"path": ("Guide", f"password: {SECRET}")},
    {"doc_title": f"password: {SECRET}"},
    {"meta": (("notes", ("a", f"password: {SECRET}")),)},
])
def test_a_secret_in_any_field_is_masked(where):
    masked, findings = mask_parsed(_doc(**where), raw_text="")
    assert SECRET not in repr(dataclasses.asdict(masked))
    assert [f.kind for f in findings] == ["password"]
