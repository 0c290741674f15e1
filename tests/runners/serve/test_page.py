"""The search page in a real headless Chromium (Debian's package, driven by Playwright).

One browser for the module; the tiny index served by a real uvicorn server (``live``), and
answers forged through ``page.route`` where a test needs text the index does not hold.
Screenshots at 360 px and 1280 px are saved to ``tests/.artifacts/page/`` (gitignored).
"""
from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.support.documents import pdf_with_outline
from tests.support.live_server import HR, STAFF
from tests.support.served_corpus import ORBIT
from vdgr_core import ids

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts" / "page"
PHONE = {"width": 360, "height": 740}
DESKTOP = {"width": 1280, "height": 900}

#: evidence text with paragraphs, a numbered list, a bullet list, a table and markup
RICH_TEXT = ("To reset the router:\n\n1. Unplug the cable.\n2. Hold RESET for 10 seconds.\n3. Wait for the amber LED."
             "\n\nLED | Meaning | Action to take when it is seen on the front panel of the router\n"
             "Solid green | Online | Nothing\nAmber blinking | Resetting | Wait until the reset completes\n\n"
             "Notes:\n- Keep the router upright.\n- Resetting erases settings <img src=x onerror=alert(1)>"
             " <b>bold</b>\n\nA closing paragraph about the reset.")
RICH = [{"path": ["Net", "Manuals", "Orbit X2", "Factory reset"], "routes": ["hybrid", "bm25"], "score": 0.5,
         "source": "Net/Manuals/orbit.md", "version": "", "text": RICH_TEXT, "page": None,
         "doc_id": "3f6b5e7e475468575828dd8d8351a86a"},
        {"path": ["Net", "Manuals", "Orbit X2 PDF", "LED codes"], "routes": ["toc"], "score": 0.25,
         "source": "Net/Manuals/x2.pdf", "version": "2.0", "text": "Amber means the reset is in progress.",
         "page": 2, "doc_id": "92cacfc14af78844d1db25ca62622f2a"}]


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),      # a fresh --user-data-dir
            executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield ctx
        finally:
            ctx.close()


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    print(f"screenshot: {path}")


def sse(answer_pieces, evidence, citations, first_evidence=None) -> str:
    """A streamed chat completion as the server sends it: the role chunk with the evidence and
    the routing, pieces, then the chunk with the evidence and the citations. ``first_evidence``
    (default: ``evidence``) is what the first chunk carries."""
    def chunk(delta, **extra):
        return "data: " + json.dumps({"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0,
                                      "model": "vdgr", "choices": [{"index": 0, "delta": delta}], **extra}) + "\n\n"
    out = chunk({"role": "assistant", "content": ""},
                evidence=evidence if first_evidence is None else first_evidence, routing=[])
    out += "".join(chunk({"content": p}) for p in answer_pieces)
    out += chunk({}, evidence=evidence, routing=[], trace={}, citations=citations)
    return out + "data: [DONE]\n\n"


def cite(answer: str, n: int) -> list[dict]:
    """The citation of ``[n]`` in ``answer``, as the answer stage reports it."""
    start = answer.index(f"[{n}]")
    return [{"start": start, "end": start + len(f"[{n}]"), "evidence": n}]


def forge(page, answer_pieces, evidence, citations, first_evidence=None) -> None:
    page.route("**/v1/chat/completions", lambda route: route.fulfill(
        status=200, content_type="text/event-stream",
        body=sse(answer_pieces, evidence, citations, first_evidence)))


def closed(tab) -> None:
    """Wait until ``tab`` is closed (it may be already: events are taken while Playwright waits)."""
    if not tab.is_closed():
        tab.wait_for_event("close")


def _connect(page, live, key):
    page.goto(live.url + "/")
    page.fill("#key", key)
    page.click("#connect")
    page.wait_for_selector("#domain option:nth-child(2)", state="attached")


def _ask(page, live, key, question, domain=None):
    _connect(page, live, key)
    if domain:
        page.select_option("#domain", domain)
    page.fill("#question", question)
    page.click("#submit")
    page.wait_for_selector("#evidence li")
    page.wait_for_selector("#answer[aria-busy='false']", state="attached")


def test_search_page_streams_the_answer_with_citations_and_evidence(browser_context, live):
    page = browser_context.new_page()
    _ask(page, live, STAFF, "How many days of annual leave do employees get?", domain="HR_Policies")
    # version picker follows the domain; the answer's citations link to the evidence items
    assert page.eval_on_selector_all("#version option", "os => os.map(o => o.value)") == ["", "2024"]
    assert "25 days" in page.inner_text("#answer")
    cite = page.locator("#answer a.cite").first
    assert cite.get_attribute("href") == "#ev-1"
    first = page.locator("#evidence li#ev-1")
    assert first.locator(".crumb").inner_text() == "HR_Policies › Policies › Leave Policy › Annual leave"
    assert first.locator(".route").all_inner_texts()            # routes shown
    assert first.locator(".score").inner_text().startswith("score 0.")
    # the question's terms are marked in the evidence
    assert {m.lower() for m in first.locator("mark").all_inner_texts()} >= {"days", "annual", "leave", "employees"}
    assert page.inner_text("#status") == f"{page.locator('#evidence li').count()} passages found"
    cite.click()
    assert page.evaluate("location.hash") == "#ev-1"
    page.close()


def test_a_loading_state_is_shown_until_the_stream_ends(browser_context, live):
    page = browser_context.new_page()
    held = []
    page.route("**/v1/chat/completions", lambda route: held.append(route))
    _connect(page, live, STAFF)
    page.fill("#question", "How do I reset the router?")
    page.press("#question", "Enter")
    page.wait_for_selector("#status .spinner")
    assert page.inner_text("#status") == "Searching the documents…"
    assert page.get_attribute("#answer", "aria-busy") == "true"
    assert page.get_attribute("#submit", "aria-disabled") == "true"
    for _ in range(600):                       # the route handler runs while Playwright waits
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    held[0].fulfill(status=200, content_type="text/event-stream",
                    body=sse(["Unplug the cable", " and hold RESET [1]."], RICH,
                             cite("Unplug the cable and hold RESET [1].", 1)))
    page.wait_for_selector("#answer[aria-busy='false']", state="attached")
    assert page.inner_text("#answer") == "Unplug the cable and hold RESET [1]."      # pieces joined
    assert page.locator("#answer a.cite").all_inner_texts() == ["[1]"]
    assert page.locator("#status .spinner").count() == 0
    assert page.get_attribute("#submit", "aria-disabled") == "false"
    page.close()


def test_the_evidence_shows_from_the_first_chunk_while_the_llm_writes(browser_context, llm_live, openai_server):
    """A real stream from a real server whose scripted LLM is held twice: before its first
    token (the passages are shown, the answer is empty) and after its first sentence (that
    sentence is shown, the page is still busy)."""
    before_first, at_first = threading.Event(), threading.Event()
    mid_answer, at_mid = threading.Event(), threading.Event()
    openai_server.responder = lambda r: (
        [lambda: (at_first.set(), before_first.wait(60)), "Employees get 25 days of annual leave [1]. ",
         "Request", lambda: (at_mid.set(), mid_answer.wait(60)), " leave in the HR portal [1]."]
        if not r.get("response_format") else json.dumps({"domain": "HR_Policies", "reason": ""}))
    page = browser_context.new_page()
    try:
        _connect(page, llm_live, STAFF)
        page.fill("#question", "How many days of annual leave do employees get?")
        page.press("#question", "Enter")
        page.wait_for_selector("#evidence li#ev-1")
        assert at_first.wait(30) and not before_first.is_set()        # no token written yet
        first = page.locator("#evidence li#ev-1")
        assert first.locator(".crumb").inner_text() == "HR_Policies › Policies › Leave Policy › Annual leave"
        assert {m.lower() for m in first.locator("mark").all_inner_texts()} >= {"annual", "leave"}
        assert page.inner_text("#answer") == ""
        assert page.get_attribute("#answer", "aria-busy") == "true"
        assert page.locator("#status .spinner").count() == 1
        assert page.inner_text("#status") == "Writing the answer…"    # the search is over
        page.evaluate("document.getElementById('ev-1').dataset.fromFirstChunk = 'yes'")
        before_first.set()
        page.wait_for_function("() => document.getElementById('answer').textContent.includes('25 days')")
        assert at_mid.wait(30) and not mid_answer.is_set()
        assert page.get_attribute("#answer", "aria-busy") == "true"
        assert page.inner_text("#status") == "Writing the answer…"
        mid_answer.set()
        page.wait_for_selector("#answer[aria-busy='false']", state="attached")
        assert page.inner_text("#answer").endswith("Request leave in the HR portal [1].")
        assert page.locator("#answer a.cite").first.get_attribute("href") == "#ev-1"
        # the last chunk's evidence equals the first's: the items shown were kept, not redrawn
        assert page.get_attribute("#ev-1", "data-from-first-chunk") == "yes"
        assert page.inner_text("#status") == f"{page.locator('#evidence > li').count()} passages found"
    finally:
        before_first.set()
        mid_answer.set()
        page.close()


def test_the_last_chunk_evidence_wins_where_it_differs_from_the_first(browser_context, live):
    page = browser_context.new_page()
    forge(page, ["Amber means resetting [2]."], RICH, cite("Amber means resetting [2].", 2), first_evidence=RICH[:1])
    _ask(page, live, STAFF, "What does amber mean?")
    assert page.locator("#evidence > li").count() == 2
    assert page.locator("#answer a.cite").first.get_attribute("href") == "#ev-2"
    page.close()


def test_evidence_keeps_paragraphs_lists_and_tables_as_text(browser_context, live):
    page = browser_context.new_page()
    shell = "Filter with ls | grep x to reset.\nThen sort | uniq -c | head the rest."
    prose = {**RICH[1], "path": ["Net", "Shell"], "page": None, "doc_id": "", "text": shell}
    forge(page, ["Hold RESET [1]."], [*RICH, prose], cite("Hold RESET [1].", 1))
    _ask(page, live, STAFF, "How do I reset the router LED?")
    # pipes in prose (rows of different widths) are not a table; its lines stay lines
    assert page.locator("#ev-3 table").count() == 0
    assert page.locator("#ev-3 p").inner_text() == shell
    text = page.locator("#ev-1 .text")
    assert text.locator("ol > li").all_inner_texts()[:3] == [
        "Unplug the cable.", "Hold RESET for 10 seconds.", "Wait for the amber LED."]
    assert text.locator("table th").all_inner_texts()[:2] == ["LED", "Meaning"]
    assert [r.locator("td").all_inner_texts() for r in text.locator("tbody tr").all()][0][:2] == \
        ["Solid green", "Online"]
    assert text.locator("ul > li").count() == 2
    assert [p.strip() for p in text.locator("p").all_inner_texts()] == [
        "To reset the router:", "Notes:", "A closing paragraph about the reset."]
    # retrieved markup stays text; the only elements are the ones the page builds
    assert page.locator("#evidence img, #evidence b, #evidence script").count() == 0
    assert "<img src=x onerror=alert(1)> <b>bold</b>" in text.locator("ul > li").nth(1).inner_text()
    tags = set(page.eval_on_selector_all("#ev-1 .text *", "es => es.map(e => e.tagName.toLowerCase())"))
    assert tags <= {"p", "ol", "ul", "li", "div", "table", "thead", "tbody", "tr", "th", "td", "mark"}
    marks = {m.lower() for m in text.locator("mark").all_inner_texts()}
    assert {"reset", "router", "led"} <= marks and "resetting" in marks      # word starts match
    assert "the" not in marks and "how" not in marks
    page.close()


def test_pdf_evidence_shows_its_page_and_opens_the_source_there(browser_context, live):
    page = browser_context.new_page()
    forge(page, ["Amber means resetting [2]."], RICH, cite("Amber means resetting [2].", 2))
    served = []

    def document(route):
        served.append((route.request.url, route.request.headers.get("authorization")))
        route.fulfill(status=200, content_type="application/pdf", body=pdf_with_outline())

    page.route("**/v1/documents/*", document)
    _ask(page, live, STAFF, "What does amber mean?")
    pdf = page.locator("#ev-2")
    assert pdf.locator(".page").inner_text().strip() == "· page 2"
    link = pdf.locator("a.source")
    assert link.inner_text() == "Net/Manuals/x2.pdf"
    assert link.get_attribute("href") == "/v1/documents/92cacfc14af78844d1db25ca62622f2a#page=2"
    assert page.locator("#ev-1 .page").count() == 0                  # not a PDF: no page
    with browser_context.expect_page() as opened:
        link.click()
    viewer = opened.value
    viewer.wait_for_function("() => location.protocol === 'blob:'")
    assert viewer.url.endswith("#page=2")
    assert served == [(live.url + "/v1/documents/92cacfc14af78844d1db25ca62622f2a", "Bearer " + STAFF)]
    viewer.close()
    page.close()


def test_a_real_pdf_source_opens_at_its_page(browser_context, documents_live):
    """End to end on a real build served with --corpus: the PDF evidence links to the
    documents route, which the page fetches with the key and opens at the page."""
    page = browser_context.new_page()
    fetched = []
    page.on("response", lambda r: fetched.append((r.url, r.status, r.headers.get("content-type")))
            if "/v1/documents/" in r.url else None)
    _ask(page, documents_live, STAFF, "Factory reset LED blinks amber")
    item = page.locator("#evidence li", has=page.locator("a.source", has_text="net/routers/x2.pdf")).first
    assert item.locator(".page").inner_text().strip() == "· page 2"
    with browser_context.expect_page() as opened:
        item.locator("a.source").click()
    viewer = opened.value
    viewer.wait_for_function("() => location.protocol === 'blob:'")
    assert viewer.url.endswith("#page=2")
    assert fetched == [(documents_live.url + "/v1/documents/" + ids.doc_id("net/routers/x2.pdf"), 200,
                        "application/pdf")]
    viewer.close()
    page.close()


def test_a_markdown_source_opens_as_plain_text(browser_context, documents_live):
    """A text source is shown as text (never rendered as HTML) and has no page."""
    page = browser_context.new_page()
    _ask(page, documents_live, STAFF, "How do I reset the router? Unplug the cable")
    item = page.locator("#evidence li", has=page.locator("a.source", has_text="net/routers/orbit.md")).first
    assert item.locator(".page").count() == 0
    assert item.locator("ol > li").first.inner_text() == "Unplug the cable."        # structure from the API
    with browser_context.expect_page() as opened:
        item.locator("a.source").click()
    viewer = opened.value
    viewer.wait_for_function("() => location.protocol === 'blob:' && document.contentType === 'text/plain'")
    assert "#" not in viewer.url
    assert viewer.evaluate("document.body.innerText") == ORBIT
    viewer.close()
    page.close()


def test_a_binary_source_is_downloaded_not_opened(browser_context, live):
    page = browser_context.new_page()
    docx = {**RICH[0], "source": "Net/Manuals/orbit.docx"}
    forge(page, ["Hold RESET [1]."], [docx], cite("Hold RESET [1].", 1))
    page.route("**/v1/documents/*", lambda route: route.fulfill(
        status=200, body=b"PK\x03\x04 not really a docx", headers={
            "Content-Type": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "Content-Disposition": "attachment; filename*=UTF-8''orbit.docx"}))
    _ask(page, live, STAFF, "How do I reset the router?")
    with page.expect_download() as download, browser_context.expect_page() as opened:
        page.click("#ev-1 a.source")
    assert download.value.suggested_filename == "orbit.docx"
    closed(opened.value)                                              # the blank tab goes again
    page.close()


def test_a_document_the_server_refuses_shows_its_error(browser_context, live):
    page = browser_context.new_page()
    forge(page, ["Hold RESET [1]."], RICH, cite("Hold RESET [1].", 1))
    page.route("**/v1/documents/*", lambda route: route.fulfill(
        status=404, content_type="application/json",
        body=json.dumps({"error": {"type": "not_found_error", "message": "document not found"}})))
    _ask(page, live, STAFF, "How do I reset the router?")
    with browser_context.expect_page() as opened:
        page.click("#ev-1 a.source")
    page.wait_for_selector("#status.error")
    closed(opened.value)                                              # the blank tab goes again
    assert page.inner_text("#status") == "document not found"
    page.close()


def test_search_page_shows_what_the_key_may_read(browser_context, live):
    page = browser_context.new_page()
    _ask(page, live, STAFF, "Quorvex band E5 salary")
    texts = " ".join(page.locator("#evidence li").all_inner_texts())
    assert "Salary Bands" not in texts
    _ask(page, live, HR, "Quorvex band E5 salary")
    crumbs = page.locator("#evidence .crumb").all_inner_texts()
    assert any("Salary Bands" in c for c in crumbs)
    page.close()


def test_links_come_from_the_citations_not_from_brackets_in_the_answer(browser_context, live):
    """An answer holding [1] [2] [99] beside one evidence item, of which the result cites [1]
    only: one link (the page renders the result's citations, never the answer's brackets)."""
    page = browser_context.new_page()
    evidence = [{"path": ["HR_Policies", "Policies", "Leave Policy", "Annual leave"], "routes": ["hybrid"],
                 "score": 0.5, "source": "HR_Policies/Policies/Leave_Policy.md", "version": "2024",
                 "text": "Employees get 25 days of annual leave (7)."}]
    answer = "Employees get 25 days [1] [2] [99]."
    forge(page, [answer[:10], answer[10:]], evidence,
          [{"start": answer.index("[1]"), "end": answer.index("[1]") + 3, "evidence": 1}])
    _ask(page, live, STAFF, "How many days of annual leave do employees get?")
    links = page.locator("#answer a.cite")
    assert links.all_inner_texts() == ["[1]"] and links.first.get_attribute("href") == "#ev-1"
    assert page.inner_text("#answer") == answer
    assert page.locator("#evidence li#ev-1 .meta").inner_text().endswith("Leave_Policy.md \u00b7 v2024")
    assert page.locator("#ev-1 a.source").count() == 0           # no doc_id: the source is not a link
    page.close()


def test_an_unversioned_document_shows_no_bare_version(browser_context, live):
    page = browser_context.new_page()
    evidence = [{"path": ["Ops", "Runbook"], "routes": ["bm25"], "score": 0.5, "source": "Ops/runbook.md",
                 "version": "", "text": "Restart the agent."}]
    forge(page, ["Restart the agent. [1]"], evidence, cite("Restart the agent. [1]", 1))
    _ask(page, live, STAFF, "How do I restart the agent?")
    assert page.locator("#evidence li#ev-1 .meta").inner_text().endswith("Ops/runbook.md")
    page.close()


def test_a_forging_document_gets_no_link_from_the_page(browser_context, forged_live):
    """A served document holding "[1] [2] [99]" and markup: the page's links are the answer's
    own citations, each to an item shown, and the document's markup stays text."""
    page = browser_context.new_page()
    _ask(page, forged_live, STAFF, "When are expense reports filed?")
    assert "14 days ahead" in page.inner_text("#answer")
    items = page.locator("#evidence li").count()
    hrefs = page.eval_on_selector_all("#answer a.cite", "as => as.map(a => a.getAttribute('href'))")
    assert hrefs and all(h.startswith("#ev-") and 1 <= int(h[4:]) <= items for h in hrefs)
    assert "[99]" not in page.inner_text("#answer")
    assert page.locator("#answer img, #evidence img").count() == 0        # markup shown as text
    assert any("[99]" in t for t in page.locator("#evidence li .text").all_inner_texts())
    page.close()


# ---- phone width, keyboard and accessibility ---------------------------------------------

def test_the_page_fits_a_360_px_phone_and_a_1280_px_screen(browser_context, live):
    page = browser_context.new_page()
    page.set_viewport_size(PHONE)
    answer = "Hold RESET for 10 seconds until the LED blinks amber [1]."
    forge(page, [answer], RICH, cite(answer, 1))
    _ask(page, live, STAFF, "How do I reset the router LED?")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    for sel in ("#key", "#connect", "#question", "#domain", "#version", "#submit", "#ev-1 .table-wrap"):
        box = page.locator(sel).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 360, sel
    screenshot(page, "search-360.png")
    page.set_viewport_size(DESKTOP)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    boxes = [page.locator(s).bounding_box() for s in ("#question", "#domain", "#version", "#submit")]
    bottoms = [b["y"] + b["height"] for b in boxes]
    assert max(bottoms) - min(bottoms) < 8                          # one row on a wide screen
    screenshot(page, "search-1280.png")
    page.close()


def test_keyboard_only_use_works(browser_context, live):
    page = browser_context.new_page()
    page.goto(live.url + "/")
    order = []
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
        # a visible focus ring on every control reached by the keyboard
        ring = page.evaluate("(() => { const s = getComputedStyle(document.activeElement);"
                             " return [s.outlineStyle, parseFloat(s.outlineWidth)]; })()")
        assert ring[0] == "solid" and ring[1] >= 2, order[-1]
    assert order == ["key", "connect", "question", "domain", "version", "submit"]
    page.focus("#key")
    page.keyboard.type(STAFF)
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")                                     # "Use key"
    page.wait_for_selector("#domain option[value='HR_Policies']", state="attached")
    page.keyboard.press("Tab")
    page.keyboard.type("How many days of annual leave?")
    page.keyboard.press("Enter")                                     # Enter submits
    page.wait_for_selector("#evidence li")
    page.wait_for_selector("#answer[aria-busy='false']", state="attached")
    assert "25 days" in page.inner_text("#answer")
    assert page.evaluate("document.activeElement.id") == "question"
    page.close()


CONTRAST = """() => {
  const rgb = (c) => { const m = c.match(/[\\d.]+/g).map(Number); return m.length > 3 ? m : [...m, 1]; };
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  const background = (el) => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
                                 if (c[3] > 0) return c; } return [255, 255, 255, 1]; };
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    const box = el.getBoundingClientRect();
    if (!own || !box.width || getComputedStyle(el).visibility === "hidden" || el.closest(".visually-hidden")) continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    out.push([el.tagName + (el.id ? "#" + el.id : "") + (el.className ? "." + el.className : ""), ratio]);
  }
  return out;
}"""


def test_accessibility_labels_contrast_and_live_regions(browser_context, live):
    page = browser_context.new_page()
    forge(page, ["Hold RESET [1]."], RICH, cite("Hold RESET [1].", 1))
    _ask(page, live, STAFF, "How do I reset the router LED?")
    labels = page.eval_on_selector_all("input, select", "es => es.map(e => [e.id, e.labels.length,"
                                       " e.labels.length ? e.labels[0].innerText.trim() : ''])")
    assert all(n == 1 and text for _, n, text in labels), labels
    assert page.get_attribute("#answer", "aria-live") == "polite"
    assert page.get_attribute("#status", "role") == "status"
    ratios = page.evaluate(CONTRAST)
    kinds = {name.split(".")[0].split("#")[0] for name, _ in ratios}
    assert {"MARK", "TH", "TD", "A", "BUTTON", "LABEL", "SPAN", "LI"} <= kinds   # the result was measured
    low = [(name, round(r, 2)) for name, r in ratios if r < 4.5]
    assert not low, low
    # the error state and the busy button too
    page.evaluate("() => { document.getElementById('status').className = 'error';"
                  " document.getElementById('status').textContent = 'document not found';"
                  " document.getElementById('submit').setAttribute('aria-disabled', 'true'); }")
    low = [(name, round(r, 2)) for name, r in page.evaluate(CONTRAST) if r < 4.5]
    assert not low, low
    page.close()



# ---- issue 48: any question, any key flow, the page's own policy ------------------------------

#: questions whose words once broke the highlight pattern, or might: hyphens, brackets,
#: backslashes, regex syntax, emoji, CJK
ODD_QUESTIONS = ["How do I set up the Wi-Fi on SKU-90214-A?", "What is [RESET] (long press) {5 s}?",
                 "Path C:\\Program Files\\vdgr\\bin and a\\b?", "a+b* ^x$ y|z . ? / \\d \\p{L}",
                 "Battery 🔋 low 😀 on X2?", "如何重置路由器 Wi-Fi 密码?", "x-", "--", "\\", "🙂"]


def _page_with_violations(browser_context):
    """A new page that records Content-Security-Policy violations in ``window.violations``."""
    page = browser_context.new_page()
    page.add_init_script("window.violations = []; document.addEventListener('securitypolicyviolation',"
                         " (e) => window.violations.push(e.violatedDirective));")
    return page


@pytest.mark.parametrize("question", ODD_QUESTIONS)
def test_the_highlight_pattern_takes_any_question(browser_context, live, question):
    page = browser_context.new_page()
    page.goto(live.url + "/")
    pattern = page.evaluate("(q) => { const p = termPattern(q); return p && [p.source, p.flags]; }", question)
    if pattern is not None:
        assert pattern[1] == "giu"
        # the source compiles under `u` on its own, and its terms match the question they came from
        assert page.evaluate("([s, q]) => [...q.matchAll(new RegExp(s, 'giu'))].length > 0", [pattern[0], question])
    page.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["360px", "1280px"])
def test_a_hyphenated_question_marks_its_words(browser_context, live, viewport):
    page = _page_with_violations(browser_context)
    page.set_viewport_size(viewport)
    text = "Wi-Fi setup on SKU-90214-A: hold [WPS] for 5 s. 如何重置 the 🔋 pack."
    evidence = [{**RICH[0], "text": text, "doc_id": ""}]
    forge(page, ["Hold WPS [1]."], evidence, cite("Hold WPS [1].", 1))
    _ask(page, live, STAFF, "How do I set up the Wi-Fi on SKU-90214-A? 如何重置 [WPS] 🔋")
    marks = page.locator("#ev-1 mark").all_inner_texts()
    assert {"Wi-Fi", "SKU-90214-A", "WPS", "如何重置"} <= set(marks), marks
    assert page.inner_text("#status") == "1 passage found"
    assert page.evaluate("window.violations") == []
    page.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["360px", "1280px"])
def test_the_typed_key_is_used_by_ask_and_by_enter_in_the_key_box(browser_context, live, viewport):
    page = browser_context.new_page()
    page.set_viewport_size(viewport)
    page.goto(live.url + "/")
    # no key: said, and nothing sent
    sent = []
    page.on("request", lambda r: sent.append(r.url) if "/v1/" in r.url else None)
    page.fill("#question", "How many days of annual leave?")
    page.click("#submit")
    assert page.inner_text("#status") == "Please enter an API key." and "enter an API key" in page.inner_text("#status")
    assert page.get_attribute("#status", "class") == "error"
    assert page.evaluate("document.activeElement.id") == "key" and sent == []
    page.press("#key", "Enter")                                      # Enter with an empty box: the same
    assert "enter an API key" in page.inner_text("#status") and sent == []
    # a key typed and Ask pressed, "Use key" never pressed: the answer comes with that key
    page.fill("#key", STAFF)
    page.click("#submit")
    page.wait_for_selector("#answer[aria-busy='false'] >> text=25 days", state="attached")
    assert "25 days" in page.inner_text("#answer")
    page.wait_for_selector("#domain option[value='HR_Policies']", state="attached")   # its domains follow
    # a wrong key says it was not accepted (never the Authorization header's syntax)
    page.fill("#key", "not-a-key-0123456789")
    page.click("#submit")
    page.wait_for_selector("#status.error")
    assert page.inner_text("#status").startswith("The API key was not accepted")
    # Enter in the key box takes the key into use ("Use key")
    fresh = browser_context.new_page()
    fresh.set_viewport_size(viewport)
    fresh.goto(live.url + "/")
    fresh.fill("#key", HR)
    fresh.press("#key", "Enter")
    fresh.wait_for_selector("#domain option[value='HR_Policies']", state="attached")
    assert fresh.evaluate("sessionStorage.getItem('vdgr-key')") == HR
    assert fresh.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    fresh.close()
    page.close()


def test_the_page_runs_under_its_strict_policy(browser_context, live):
    """The page's Content-Security-Policy allows no inline code: the page works under it with no
    violation, and a script injected into it does not run."""
    page = _page_with_violations(browser_context)
    response = page.goto(live.url + "/")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer" and response.headers["x-frame-options"] == "DENY"
    assert page.locator("script:not([src])").count() == 0 and page.locator("style").count() == 0
    _ask(page, live, STAFF, "How many days of annual leave do employees get?")
    assert "25 days" in page.inner_text("#answer")
    assert page.evaluate("window.violations") == []
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                  " document.body.append(s); }")
    page.wait_for_function("() => window.violations.length > 0")
    assert page.evaluate("window.injected") is None
    assert page.evaluate("window.violations") == ["script-src-elem"]
    page.close()
