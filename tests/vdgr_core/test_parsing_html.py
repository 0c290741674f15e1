import pytest

from schemas.errors import DeadLetterReason, DocumentError
from vdgr_core.parsing import parse_document

PAGE = """<!DOCTYPE html>
<html><head><title>Orbit Manual</title><style>p {color: red}</style>
<script>var secret = 1;</script></head>
<body>
<nav><a href="/">Home</a> menu text</nav>
<h1>Orbit X2</h1>
<p>Welcome to the <b>Orbit</b> manual.</p>
<h2>Reset</h2>
<p>Hold the <a href="#">reset</a> button.</p>
<ul><li>Unplug</li><li>Wait 10 s</li></ul>
<h4>Deep note</h4><p>skipped a level</p>
<h2>Specs</h2>
<table><tr><td>CPU</td><td>ARM</td></tr></table>
<!-- a comment -->
</body></html>"""


def test_title_sections_and_dropped_elements():
    doc = parse_document(PAGE, "html", "fb")
    assert doc.title == "Orbit X2"   # the single <h1> names the page; <title> is the fallback
    assert [(s.title, s.heading_path) for s in doc.sections] == [
        ("", ()),
        ("Reset", ("Reset",)),
        ("Deep note", ("Reset", "Deep note")),
        ("Specs", ("Specs",)),
    ]
    all_text = " ".join(s.text for s in doc.sections)
    for dropped in ("secret", "menu text", "color", "a comment", "Home"):
        assert dropped not in all_text
    assert doc.sections[0].text == "Welcome to the Orbit manual."
    assert doc.sections[1].text == "Hold the reset button.\n\nUnplug\nWait 10 s"
    assert doc.sections[3].text == "CPU ARM"


def test_title_from_first_h1_without_title_tag():
    doc = parse_document("<h1>First</h1><p>a</p><h1>Second</h1><p>b</p>", "html", "fb")
    assert doc.title == "First"
    assert [s.title for s in doc.sections] == ["First", "Second"]


def test_fallback_title_and_br_lines():
    doc = parse_document("<p>one<br>two</p><p>three</p>", "html", "fallback")
    assert doc.title == "fallback"
    assert doc.sections[0].text == "one\ntwo\n\nthree"


def test_unclosed_html_is_truncated():
    with pytest.raises(DocumentError) as e:
        parse_document("<html><body><h1>x</h1><p>cut in the mid", "html", "fb")
    assert e.value.reason == DeadLetterReason.TRUNCATED


def test_script_only_is_no_content():
    with pytest.raises(DocumentError) as e:
        parse_document("<html><script>x()</script></html>", "html", "fb")
    assert e.value.reason == DeadLetterReason.NO_CONTENT


SPHINX_PAGE = """<!DOCTYPE html><html><head><title>json — JSON encoder — Python 3.11 documentation</title></head>
<body><div class="related" role="navigation"><h3>Navigation</h3><ul><li>index</li></ul></div>
<div class="document"><div class="body" role="main">
<section><h1>json — JSON encoder<a class="headerlink" href="#m">¶</a></h1><p>Intro text.</p>
<section><h2>Basic Usage<a class="headerlink" href="#b">¶</a></h2>
<dl><dt>json.dump(obj)<a class="headerlink" href="#d">¶</a></dt><dd>Serialize obj.</dd></dl></section></section>
</div></div>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><p>sidebar</p></div>
<div class="footer">footer text</div></body></html>"""


def test_documentation_page_furniture_is_dropped():
    doc = parse_document(SPHINX_PAGE, "html", "fb")
    assert doc.title == "json — JSON encoder"
    assert [s.heading_path for s in doc.sections] == [(), ("Basic Usage",)]
    text = " ".join(s.text for s in doc.sections)
    assert "¶" not in text and "sidebar" not in text and "Navigation" not in text
    assert "json.dump(obj)" in text and "Serialize obj." in text
