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
    assert doc.sections[1].text == "Hold the reset button.\n\n- Unplug\n- Wait 10 s"
    assert doc.sections[3].text == "CPU | ARM"


def test_title_from_first_h1_without_title_tag():
    doc = parse_document("<h1>First</h1><p>a</p><h1>Second</h1><p>b</p>", "html", "fb")
    assert doc.title == "First"
    assert [s.title for s in doc.sections] == ["First", "Second"]


def test_fallback_title_and_br_lines():
    doc = parse_document("<p>one<br>two</p><p>three</p>", "html", "fallback")
    assert doc.title == "fallback"
    assert doc.sections[0].text == "one\ntwo\n\nthree"


@pytest.mark.parametrize("cut", ["<p>cut in the mid", "<p>cut in <a href=\"x.html", "<p>cut <!-- a comm"])
def test_a_page_cut_short_is_truncated(cut):
    with pytest.raises(DocumentError) as e:
        parse_document("<html><body><h1>x</h1>" + cut, "html", "fb")
    assert e.value.reason == DeadLetterReason.TRUNCATED


def test_a_page_that_leaves_out_its_end_tags_is_parsed():
    # SQLite's pages end like this: no </body>, no </html>, a <div> never closed
    page = ("<!DOCTYPE html>\n<html><head><title>Pragma statements</title></head>\n<body>\n<div class=nosearch>\n"
            "<h2>PRAGMA cache_size</h2>\n<p>The default suggested cache size is -2000.\n"
            "<p>See also lists of\n  <a href=\"objlist.html\">Objects</a>.</p>\n")
    doc = parse_document(page, "html", "fb")
    assert "The default suggested cache size is -2000." in doc.sections[-1].text
    assert parse_document(page.rstrip("\n") + " and\n<a href=x>Functions</a>.\n\n", "html", "fb").sections


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


def _text(html: str) -> str:
    return "\n\n".join(s.text for s in parse_document(html, "html", "fb").sections)


def test_ordered_list_items_are_numbered_lines():
    text = _text("<h1>T</h1><p>Reset it:</p><ol><li>Hold WPS.</li><li><p>Press power.</p>"
                 "<p>Wait for the light.</p></li></ol><p>Done.</p>")
    assert text == "Reset it:\n\n1. Hold WPS.\n2. Press power.\n\n  Wait for the light.\n\nDone."


def test_nested_lists_indent_and_ordered_numbering_follows_start_and_value():
    text = _text("<h1>T</h1><ul>\n <li>Parent\n  <ul><li>Child <b>one</b></li><li>Child two\n"
                 "<ol start='3'><li>deep</li><li value='7'>seven</li><li>eight</li></ol></li></ul></li>\n"
                 " <li>Sibling</li></ul>")
    assert text == ("- Parent\n  - Child one\n  - Child two\n    3. deep\n    7. seven\n    8. eight\n"
                    "- Sibling")


def test_table_rows_are_lines_with_cells_separated_like_markdown():
    html = ("<h1>T</h1><table><caption>Ports</caption><thead><tr><th>Name</th><th>Value</th></tr></thead>"
            "<tbody><tr><td><p>CPU</p></td><td>ARM<br>v8</td></tr>\n<tr><td>RAM</td><td>2 GB</td></tr>"
            "</tbody></table>")
    assert _text(html) == "Ports\nName | Value\nCPU | ARM v8\nRAM | 2 GB"
    markdown = parse_document("# T\n\n| Name | Value |\n|---|---|\n| RAM | 2 GB |\n", "markdown", "fb")
    html_rows = _text("<h1>T</h1><table><tr><th>Name</th><th>Value</th></tr><tr><td>RAM</td><td>2 GB</td></tr>"
                      "</table>")
    assert html_rows == markdown.sections[0].text == "Name | Value\nRAM | 2 GB"


def test_a_list_inside_a_table_cell_stays_in_its_row():
    assert _text("<h1>T</h1><table><tr><td><ul><li>a</li><li>b</li></ul></td><td>c</td></tr></table>") \
        == "a b | c"


def test_list_items_and_rows_are_answer_units():
    from vdgr_core.query.answer_units import answer_units

    text = _text("<h1>T</h1><p>Reset the router:</p><ol><li>Hold WPS.</li><li>Press power.</li></ol>")
    steps = [u for u in answer_units(text) if u.kind == "steps"]
    assert [u.text for u in steps] == ["1. Hold WPS.\n2. Press power."]
    rows = _text("<h1>T</h1><table><tr><th>Port</th><th>Use</th></tr><tr><td>22</td><td>ssh</td></tr></table>")
    assert [(u.kind, u.text) for u in answer_units(rows)] == [("row", "22 | ssh")]


def test_the_html_rules_are_part_of_the_content_rules():
    from vdgr_core.parsing.html import PARSER_VERSION
    from vdgr_core.safety import content_rules

    assert PARSER_VERSION in content_rules().split("/")


def test_a_highlighted_pre_keeps_its_lines():
    # Sphinx (Pygments) writes each token as a span and the line breaks between them
    pre = ('<div class="highlight"><pre><span></span><span class="gp">&gt;&gt;&gt; </span><span class="kn">import'
           '</span> <span class="nn">pdb</span>\n<span class="gp">&gt;&gt;&gt; </span><span class="n">pdb</span>'
           '<span class="o">.</span><span class="n">run</span>()\n\n<span class="go">(Pdb) continue</span>\n</pre></div>')
    page = f"<html><body><h1>pdb</h1><p>Typical usage is:</p>{pre}<p>When invoked as a script ...</p></body></html>"
    text = parse_document(page, "html", "fb").sections[0].text
    assert text == "Typical usage is:\n\n>>> import pdb\n>>> pdb.run()\n\n(Pdb) continue\n\nWhen invoked as a script ..."
