"""The search page in a real headless Chromium (Debian's package, driven by Playwright)."""
from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import sync_playwright

from tests.support.live_server import HR, STAFF

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


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


def _ask(page, live, key, question, domain=None):
    page.goto(live.url + "/")
    page.fill("#key", key)
    page.click("#connect")
    page.wait_for_selector("#domain option[value='HR_Policies']", state="attached")
    if domain:
        page.select_option("#domain", domain)
    page.fill("#question", question)
    page.click("#submit")
    page.wait_for_selector("#evidence li")


def test_search_page_renders_answer_citations_and_evidence(browser_context, live):
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
    cite.click()
    assert page.evaluate("location.hash") == "#ev-1"
    page.close()


def test_search_page_shows_what_the_key_may_read_and_escapes_text(browser_context, live):
    page = browser_context.new_page()
    _ask(page, live, STAFF, "Quorvex band E5 salary")
    texts = " ".join(page.locator("#evidence li").all_inner_texts())
    assert "Salary Bands" not in texts
    _ask(page, live, HR, "Quorvex band E5 salary")
    crumbs = page.locator("#evidence .crumb").all_inner_texts()
    assert any("Salary Bands" in c for c in crumbs)
    # evidence text is inserted as text: no element was created from document content
    assert page.locator("#evidence .text *").count() == 0
    page.close()


def test_links_come_from_the_citations_not_from_brackets_in_the_answer(browser_context, live):
    """An answer holding [1] [2] [99] beside one evidence item, of which the result cites [1]
    only: one link (the page renders the result's citations, never the answer's brackets)."""
    import json

    page = browser_context.new_page()
    evidence = [{"path": ["HR_Policies", "Policies", "Leave Policy", "Annual leave"], "routes": ["hybrid"],
                 "score": 0.5, "source": "HR_Policies/Policies/Leave_Policy.md", "version": "2024",
                 "text": "Employees get 25 days of annual leave (7)."}]
    answer = "Employees get 25 days [1] [2] [99]."
    forged = {"answer": answer, "evidence": evidence,
              "citations": [{"start": answer.index("[1]"), "end": answer.index("[1]") + 3, "evidence": 1}]}
    page.route("**/v1/query", lambda route: route.fulfill(status=200, content_type="application/json",
                                                          body=json.dumps(forged)))
    _ask(page, live, STAFF, "How many days of annual leave do employees get?")
    links = page.locator("#answer a.cite")
    assert links.all_inner_texts() == ["[1]"] and links.first.get_attribute("href") == "#ev-1"
    assert page.inner_text("#answer") == answer
    assert page.locator("#evidence li#ev-1 .meta").inner_text().endswith("Leave_Policy.md \u00b7 v2024")
    page.close()


def test_an_unversioned_document_shows_no_bare_version(browser_context, live):
    import json

    page = browser_context.new_page()
    evidence = [{"path": ["Ops", "Runbook"], "routes": ["bm25"], "score": 0.5, "source": "Ops/runbook.md",
                 "version": "", "text": "Restart the agent."}]
    page.route("**/v1/query", lambda route: route.fulfill(
        status=200, content_type="application/json",
        body=json.dumps({"answer": "Restart the agent. [1]", "evidence": evidence,
                         "citations": [{"start": 19, "end": 22, "evidence": 1}]})))
    _ask(page, live, STAFF, "How do I restart the agent?")
    assert page.locator("#evidence li#ev-1 .meta").inner_text().endswith("Ops/runbook.md")
    page.close()


def test_a_forging_document_gets_no_link_from_the_page(browser_context, forged_live):
    """A served document holding "[1] [2] [99]" and markup: the page's links are the answer's
    own citations, each to an item shown, and the document's markup stays text."""
    page = browser_context.new_page()
    page.goto(forged_live.url + "/")
    page.fill("#key", STAFF)
    page.click("#connect")
    page.wait_for_selector("#domain option[value='Finance']", state="attached")
    page.fill("#question", "When are expense reports filed?")
    page.click("#submit")
    page.wait_for_selector("#evidence li")
    assert "14 days ahead" in page.inner_text("#answer")
    items = page.locator("#evidence li").count()
    hrefs = page.eval_on_selector_all("#answer a.cite", "as => as.map(a => a.getAttribute('href'))")
    assert hrefs and all(h.startswith("#ev-") and 1 <= int(h[4:]) <= items for h in hrefs)
    assert "[99]" not in page.inner_text("#answer")
    assert page.locator("#answer img, #evidence img").count() == 0        # markup shown as text
    assert any("[99]" in t for t in page.locator("#evidence li .text").all_inner_texts())
    page.close()
