import pytest

from schemas.errors import DeadLetterReason, DocumentError
from vdgr_core.parsing import parse_document


def md(text, fallback="fallback"):
    return parse_document(text, "markdown", fallback)


def by_title(doc):
    return {s.title: s for s in doc.sections}


def test_single_h1_is_title_and_subsections_become_level_one():
    doc = md("# Orbit X2\n\nIntro.\n\n## Setup\n\nPlug it in.\n\n### Cables\n\nUse CAT6.\n")
    assert doc.title == "Orbit X2"
    assert [(s.title, s.level, s.heading_path) for s in doc.sections] == [
        ("", 0, ()),
        ("Setup", 1, ("Setup",)),
        ("Cables", 2, ("Setup", "Cables")),
    ]
    assert doc.sections[0].text == "Intro."


def test_several_h1_are_sections_and_title_is_first():
    doc = md("# A\n\ntext a\n\n# B\n\ntext b\n", fallback="fb")
    assert doc.title == "A"
    assert [s.heading_path for s in doc.sections] == [("A",), ("B",)]


def test_fallback_title_without_h1():
    doc = md("Some words.\n\n## Part\n\nmore\n", fallback="My File")
    assert doc.title == "My File"
    assert doc.sections[0] == doc.sections[0].__class__("", 0, (), "Some words.")
    assert doc.sections[1].heading_path == ("Part",)


def test_setext_headings():
    doc = md("Title\n=====\n\nintro\n\nPart One\n--------\n\nbody one\n")
    assert doc.title == "Title"
    assert [s.title for s in doc.sections] == ["", "Part One"]
    assert by_title(doc)["Part One"].text == "body one"


def test_dash_line_after_blank_is_a_rule_not_a_heading():
    doc = md("# T\n\n## S\n\nfirst\n\n---\n\nsecond\n")
    assert by_title(doc)["S"].text == "first\n\nsecond"


def test_fenced_code_headings_ignored_and_code_kept():
    doc = md("# T\n\n## S\n\n```bash\n# not a heading\nreboot --now\n```\n\nafter\n")
    assert [s.title for s in doc.sections] == ["S"]
    assert by_title(doc)["S"].text == "# not a heading\nreboot --now\n\nafter"


def test_inline_markup_stripped_and_lists_as_lines():
    doc = md("# T\n\n## The `cfg` *option*\n\nSee **bold**, _it_ and [docs](http://x/y).\n\n"
             "- one\n- two\n* three\n\n1. step\n")
    s = doc.sections[0]
    assert s.title == "The cfg option"
    assert s.text == "See bold, it and docs.\n\none\ntwo\nthree\n\n1. step"


def test_snake_case_and_escapes_survive():
    doc = md("# T\n\n## S\n\ncall my_func_name and \\*literal\\*\n")
    assert doc.sections[0].text == "call my_func_name and *literal*"


def test_skipped_levels_nest_under_nearest():
    doc = md("# A\n\nx\n\n# B\n\n### C\n\ny\n\n## D\n\nz\n")
    assert by_title(doc)["C"].heading_path == ("B", "C")
    assert by_title(doc)["C"].level == 2
    assert by_title(doc)["D"].heading_path == ("B", "D")


def test_front_matter_title_and_metadata():
    doc = md("---\ntitle: Guide\nversion: 2.1\nacl: [eng, ops]\n---\n# Other\n\nbody\n")
    assert doc.title == "Guide"
    assert doc.metadata == (("acl", ("eng", "ops")), ("title", "Guide"), ("version", 2.1))
    assert doc.sections[0].text == "body"
    hash(doc)  # frozen and hashable


def test_unclosed_front_matter_is_truncated():
    with pytest.raises(DocumentError) as e:
        md("---\ntitle: x\n\n# Heading\n\nbody\n")
    assert e.value.reason == DeadLetterReason.TRUNCATED


@pytest.mark.parametrize("front", ["title: [unclosed\n", "- a list\n- not a mapping\n"])
def test_bad_front_matter_is_parse_error(front):
    with pytest.raises(DocumentError) as e:
        md(f"---\n{front}---\nbody\n")
    assert e.value.reason == DeadLetterReason.PARSE_ERROR


def test_hash_without_space_is_not_a_heading():
    doc = md("#hashtag text\n\n## Real\n\nbody\n")
    assert doc.sections[0].text == "#hashtag text"
    assert doc.sections[1].title == "Real"


def test_only_headings_is_no_content():
    with pytest.raises(DocumentError) as e:
        md("# A\n\n## B\n")
    assert e.value.reason == DeadLetterReason.NO_CONTENT


# Raw HTML keeps its text, tags removed (issue 30: "the fallback tag instead" was lost)
@pytest.mark.parametrize("raw,text", [
    ('Use the <span title="a>b">fallback tag</span> instead.', "Use the fallback tag instead."),
    ("Press <kbd\n>Enter</kbd> to use\nthe <span class=\"a\nb\">fallback tag</span> instead.",
     "Press Enter to use\nthe fallback tag instead."),
    ("<video controls>\n  Your browser cannot play it; use the fallback tag instead.\n</video>",
     "Your browser cannot play it; use the fallback tag instead."),
    ('<p align="center">\n  <img src="logo.png" alt="Project logo" width="200">\n</p>', "Project logo"),
    ("<table><tr><th>LED</th><th>Meaning</th></tr><tr><td>Green</td><td>OK</td></tr></table>",
     "LED | Meaning\n\nGreen | OK"),
    ("Line one<br>Line two<br/>Line three", "Line one\nLine two\nLine three"),
    ("<script>alert(1)</script>Visible <style>p { color: red }</style>text", "Visible text"),
    ("Text <?php echo 1; ?>and <![CDATA[kept data]]> here", "Text and kept data here"),
])
def test_raw_html_keeps_its_text(raw, text):
    doc = md(f"# Guide\n\n## Part\n\n{raw}\n")
    assert by_title(doc)["Part"].text == text


def test_code_autolinks_and_comparisons_are_not_html():
    doc = md("# Guide\n\n## Part\n\nType `<div>` or a < b > c, 3<5, <https://example.com>, <ops@example.com>.\n\n"
             "```html\n<div class=\"x\">kept as written</div>\n```\n")
    assert by_title(doc)["Part"].text == ("Type <div> or a < b > c, 3<5, https://example.com, ops@example.com.\n\n"
                                          "<div class=\"x\">kept as written</div>")


def test_html_block_headings_are_text_and_markdown_headings_still_split():
    doc = md("# Guide\n\n<div>\n\n## Inside\n\nStill <b>bold</b> text.\n\n</div>\n")
    assert by_title(doc)["Inside"].text == "Still bold text."


def test_the_markdown_rules_are_part_of_the_content_rules():
    from vdgr_core.parsing.markdown import PARSER_VERSION
    from vdgr_core.safety import content_rules

    assert PARSER_VERSION in content_rules().split("/")
