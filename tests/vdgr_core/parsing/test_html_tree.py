"""End tags a page leaves out (vdgr_core.parsing.html_tree): the tree a browser builds."""
import pytest

from vdgr_core.parsing import parse_document
from vdgr_core.parsing.html_tree import html_soup


@pytest.mark.parametrize("page, tree", [
    ("<ul><li>a<li>b</ul>", "<ul><li>a</li><li>b</li></ul>"),
    ("<p>x<p>y<div>z</div>", "<p>x</p><p>y</p><div>z</div>"),
    ("<p>x<h2>t</h2>", "<p>x</p><h2>t</h2>"),
    ("<dl><dt>a<dd>b<p>c<dt>d<dd>e</dl>", "<dl><dt>a</dt><dd>b<p>c</p></dd><dt>d</dt><dd>e</dd></dl>"),
    ("<table><tr><td>1<td>2<tr><td>3</table>", "<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>"),
    # an item of an outer list stays open inside a nested list; a cell's paragraph in its cell
    ("<ul><li>a<ul><li>b</ul><li>c</ul>", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>"),
    ("<p>x<table><tr><td><p>in<td>next</table>", "<p>x</p><table><tr><td><p>in</p></td><td>next</td></tr></table>"),
    # closed elements and whitespace are kept as html.parser gives them
    ("<pre><span>a</span>\n<span>b</span></pre>", "<pre><span>a</span>\n<span>b</span></pre>"),
])
def test_implied_end_tags_close_as_the_html_standard_says(page, tree):
    assert str(html_soup(page)) == tree


def test_a_page_of_unclosed_items_is_not_nested_item_in_item():
    # SQLite's cross-reference page: 10,000 items with no </li> passed Python's recursion limit
    page = "<html><body><h1>Index</h1><ul>" + "".join(f"<li>entry {i}\n" for i in range(5000)) + "</ul></body></html>"
    text = parse_document(page, "html", "fb").sections[0].text
    assert text.splitlines()[:2] == ["- entry 0", "- entry 1"] and text.count("\n- ") == 4999


LONG = "It sets the threading mode for every connection the process opens from then on, as the build allows."


def test_unclosed_definition_terms_are_entries():
    # SQLite's C reference: <dt> and <dd> with no end tags, each <dd> a paragraph left open
    page = ("<html><body><h1>Configuration Options</h1><p>Options for sqlite3_config().<dl>"
            f"<dt>SQLITE_CONFIG_SINGLETHREAD<dd><p>There are no arguments to this option. {LONG}"
            f"<dt>SQLITE_CONFIG_MALLOC<dd><p>Takes a pointer to a sqlite3_mem_methods. {LONG}<p>A second paragraph."
            "</dl></body></html>")
    got = [(s.heading_path, s.text) for s in parse_document(page, "html", "fb").sections]
    assert [p for p, _ in got] == [(), ("SQLITE_CONFIG_SINGLETHREAD",), ("SQLITE_CONFIG_MALLOC",)]
    assert got[2][1].startswith("SQLITE_CONFIG_MALLOC\n\nTakes a pointer")
    assert got[2][1].endswith("\n\nA second paragraph.") and "no arguments" not in got[2][1]


def test_a_definition_list_left_open_keeps_the_rest_of_the_page():
    # SQLite's capi3ref.html: one <dl> is never closed, so a browser puts the rest of the page
    # (headings, paragraphs, an anchor between terms) inside it, beside its <dt>s and <dd>s
    page = ("<html><body><h1>C API</h1><h2>Transaction states</h2><p><dl><a name='none'></a>"
            f"<dt>SQLITE_TXN_NONE</dt><dd>No transaction is pending. {LONG}</dd>"
            f"<dt>SQLITE_TXN_READ</dt><dd>A read transaction. {LONG}</dd><p>See also the list of constants."
            f"<hr><h2>Online backup</h2><p>The function sqlite3_backup_finish() releases every resource. {LONG}"
            "</body></html>")
    got = [(s.heading_path, s.text) for s in parse_document(page, "html", "fb").sections]
    assert [p for p, _ in got] == [("Transaction states",), ("Transaction states", "SQLITE_TXN_NONE"),
                                   ("Transaction states", "SQLITE_TXN_READ"), ("Online backup",)]
    assert got[2][1].endswith("\n\nSee also the list of constants.")
    assert got[3][1].startswith("The function sqlite3_backup_finish() releases every resource.")
