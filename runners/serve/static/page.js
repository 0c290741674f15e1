"use strict";
// The search page's script (index.html; served as /page.js: the page's Content-Security-Policy
// allows no inline script).
// Everything taken from the server (answers, retrieved documents) is untrusted: it is inserted
// as text nodes and elements this script builds (textContent), never as HTML.
const $ = (id) => document.getElementById(id);
let domains = [];

// The key in use, kept in the tab's session storage; the box may hold a newer one until the
// next "Use key", Enter in the box or "Ask" (useKey).
function key() { return sessionStorage.getItem("vdgr-key") || ""; }

// Takes the key typed in the box into use: false (and says so) when the box is empty.
// Returns "changed" when it differs from the key used before.
function useKey() {
  const typed = $("key").value.trim();
  if (!typed) {
    setStatus("Please enter an API key.", "error");
    $("key").focus();
    return false;
  }
  if (typed === key()) return "same";
  sessionStorage.setItem("vdgr-key", typed);
  return "changed";
}

function errorOf(data, status) {
  const message = (data && data.error && data.error.message) || ("HTTP " + status);
  return status === 401 ? "The API key was not accepted (" + message + ")." : message;
}

async function api(path, body) {
  const init = { headers: { "Authorization": "Bearer " + key() } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(errorOf(data, r.status));
  return data;
}

function setStatus(text, kind) {     // kind: "busy" (spinner), "error", or nothing
  const s = $("status");
  s.className = kind === "error" ? "error" : "";
  s.replaceChildren();
  if (kind === "busy") {
    const spin = document.createElement("span");
    spin.className = "spinner"; spin.setAttribute("aria-hidden", "true");
    s.append(spin);
  }
  if (text) s.append(document.createTextNode(text));
}

function option(value, label) {
  const o = document.createElement("option");
  o.value = value; o.textContent = label; return o;
}

function fillVersions() {
  const sel = $("version"), d = domains.find((x) => x.name === $("domain").value);
  sel.replaceChildren(option("", "any"));
  const versions = d ? d.versions : [...new Set(domains.flatMap((x) => x.versions))].sort();
  for (const v of versions) sel.append(option(v, v));
}

async function loadDomains(quiet) {    // quiet: leave the status line to the question asked
  if (!quiet) setStatus("");
  try {
    domains = (await api("/v1/domains")).domains;
  } catch (e) { if (!quiet) setStatus(e.message, "error"); return; }
  const sel = $("domain");
  sel.replaceChildren(option("", "any"));
  for (const d of domains) sel.append(option(d.name, d.name));
  fillVersions();
}

// ---- query terms, highlighted in the evidence with <mark> elements built here
const STOP = new Set(("a an and are as at be by can do does for from get has have how i if in into is it its " +
  "me my of on or the this that to was what when where which who why will with you your").split(" "));

// A string as a literal inside a pattern with the `u` flag, where only the syntax characters
// and "/" may be escaped ("\-" is an error there: "Wi-Fi" broke the page).
function literal(text) { return text.replace(/[\\^$.*+?()[\]{}|\/]/g, "\\$&"); }

function termPattern(question) {
  const words = (question.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}_-]*/gu) || [])
    .filter((w) => !STOP.has(w) && (w.length > 2 || /\d/.test(w)));
  const terms = [...new Set(words)].sort((a, b) => b.length - a.length)
    .map((w) => literal(w) + (w.length > 3 ? "[\\p{L}]*" : ""));
  if (!terms.length) return null;
  return new RegExp("(?<![\\p{L}\\p{N}])(?:" + terms.join("|") + ")(?![\\p{L}\\p{N}])", "giu");
}

function appendMarked(parent, text, pattern) {
  if (!pattern) { parent.append(document.createTextNode(text)); return; }
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
    const mark = document.createElement("mark");
    mark.textContent = m[0];
    parent.append(mark);
    last = m.index + m[0].length;
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
}

// ---- evidence text: paragraphs (blank lines), numbered and bulleted lists, pipe tables
const ITEM = /^\s*(?:(\d{1,3})[.)]|[-*\u2022\u2013])\s+(.*)$/;
const isRow = (line) => cells(line).length >= 2;
const isRule = (line) => /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(line);

function cells(line) {
  let t = line.trim();
  if (t.startsWith("|")) t = t.slice(1);
  if (t.endsWith("|")) t = t.slice(0, -1);
  return t.split("|").map((c) => c.trim());
}

function startsTable(lines, i) {
  if (i + 1 >= lines.length || !isRow(lines[i])) return false;
  const next = isRule(lines[i + 1]) ? lines[i + 2] : lines[i + 1];
  return next !== undefined && cells(next).length === cells(lines[i]).length;
}

function tableOf(lines, pattern) {
  // a wide table scrolls inside its own box (reachable by keyboard), never the page
  const wrap = document.createElement("div"); wrap.className = "table-wrap";
  wrap.tabIndex = 0; wrap.setAttribute("role", "region"); wrap.setAttribute("aria-label", "table");
  const table = document.createElement("table");
  const rows = lines.filter((l) => !isRule(l)).map(cells);
  const head = document.createElement("thead"), body = document.createElement("tbody");
  rows.forEach((row, i) => {
    const tr = document.createElement("tr");
    for (const c of row) {
      const cell = document.createElement(i === 0 ? "th" : "td");
      if (i === 0) cell.scope = "col";
      appendMarked(cell, c, pattern);
      tr.append(cell);
    }
    (i === 0 ? head : body).append(tr);
  });
  table.append(head, body); wrap.append(table);
  return wrap;
}

function listOf(lines, pattern) {
  const first = lines[0].match(ITEM);
  const list = document.createElement(first[1] ? "ol" : "ul");
  if (first[1] && first[1] !== "1") list.start = parseInt(first[1], 10);
  let li = null;
  for (const line of lines) {
    const m = line.match(ITEM);
    if (m) {
      li = document.createElement("li"); list.append(li);
      appendMarked(li, m[2], pattern);
    } else {                          // a continuation line of the item above
      li.append(document.createTextNode(" "));
      appendMarked(li, line.trim(), pattern);
    }
  }
  return list;
}

function renderText(box, text, pattern) {
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split("\n").filter((l) => l.trim());
    let i = 0;
    while (i < lines.length) {
      let j = i + 1;
      if (startsTable(lines, i)) {        // rows of one width (a rule line between them allowed)
        const width = cells(lines[i]).length;
        while (j < lines.length && (isRule(lines[j]) || cells(lines[j]).length === width)) j++;
        box.append(tableOf(lines.slice(i, j), pattern));
      } else if (ITEM.test(lines[i])) {
        while (j < lines.length && (ITEM.test(lines[j]) || /^\s{2,}\S/.test(lines[j]))) j++;
        box.append(listOf(lines.slice(i, j), pattern));
      } else {
        while (j < lines.length && !ITEM.test(lines[j]) && !startsTable(lines, j)) j++;
        const p = document.createElement("p");
        appendMarked(p, lines.slice(i, j).join("\n"), pattern);
        box.append(p);
      }
      i = j;
    }
  }
}

// ---- source documents: fetched with the key, opened from a blob (at the PDF's page)
async function openDocument(ev, event) {
  event.preventDefault();
  const win = window.open("", "_blank");     // opened now, while the click still counts
  setStatus("Opening " + ev.source + "\u2026", "busy");
  try {
    const r = await fetch("/v1/documents/" + encodeURIComponent(ev.doc_id),
                          { headers: { "Authorization": "Bearer " + key() } });
    if (!r.ok) throw new Error(errorOf(await r.json().catch(() => ({})), r.status));
    const isPdf = (r.headers.get("Content-Type") || "").startsWith("application/pdf");
    if (!isPdf && (r.headers.get("Content-Disposition") || "").startsWith("attachment")) {
      // a binary format (DOCX): saved, not opened
      const a = document.createElement("a");
      a.href = URL.createObjectURL(new Blob([await r.arrayBuffer()], { type: "application/octet-stream" }));
      a.download = ev.source.split("/").pop();
      a.click();
      if (win) win.close();
      setStatus("");
      return;
    }
    // only a PDF keeps its type: anything else is shown as plain text, never rendered
    const blob = new Blob([await r.arrayBuffer()], { type: isPdf ? "application/pdf" : "text/plain;charset=utf-8" });
    const url = URL.createObjectURL(blob) + (isPdf && ev.page ? "#page=" + ev.page : "");
    if (win) { win.opener = null; win.location.href = url; } else {   // pop-ups blocked: a plain link
      const a = document.createElement("a");
      a.href = url; a.target = "_blank"; a.rel = "noopener"; a.click();
    }
    setStatus("");
  } catch (err) {
    if (win) win.close();
    setStatus(err.message, "error");
  }
}

function renderEvidence(items, pattern) {
  const ol = $("evidence");
  ol.replaceChildren();
  items.forEach((ev, i) => {
    const li = document.createElement("li");
    li.id = "ev-" + (i + 1); li.tabIndex = -1;
    const crumb = document.createElement("div");
    crumb.className = "crumb"; crumb.textContent = ev.path.join(" \u203a ");
    const meta = document.createElement("div");
    meta.className = "meta";
    for (const r of ev.routes) {
      const s = document.createElement("span"); s.className = "route"; s.textContent = r; meta.append(s);
    }
    const score = document.createElement("span");
    score.className = "score"; score.textContent = "score " + ev.score.toFixed(4);
    meta.append(score, document.createTextNode(" \u00b7 "));
    let src;
    if (ev.doc_id) {
      src = document.createElement("a");
      src.href = "/v1/documents/" + encodeURIComponent(ev.doc_id) + (ev.page ? "#page=" + ev.page : "");
      src.addEventListener("click", (e) => openDocument(ev, e));
    } else {
      src = document.createElement("span");
    }
    src.className = "source"; src.textContent = ev.source;
    meta.append(src);
    if (ev.page) {
      const page = document.createElement("span");
      page.className = "page"; page.textContent = " \u00b7 page " + ev.page;
      meta.append(page);
    }
    // an unversioned document shows no version (not a bare "v")
    if (ev.version) meta.append(document.createTextNode(" \u00b7 v" + ev.version));
    const text = document.createElement("div");
    text.className = "text";
    renderText(text, ev.text, pattern);
    li.append(crumb, meta, text);
    ol.append(li);
  });
}

// Citations come with the result (the answer stage's own [n] markers, with their offsets):
// each becomes a link to its evidence item; nothing in the answer text is parsed for them.
function renderAnswer(text, citations, evidence) {
  const box = $("answer");
  box.replaceChildren();
  let last = 0;
  for (const c of citations) {
    if (c.start < last || c.evidence < 1 || c.evidence > evidence.length ||
        text.slice(c.start, c.end) !== "[" + c.evidence + "]") continue;
    box.append(document.createTextNode(text.slice(last, c.start)));
    const a = document.createElement("a");
    a.href = "#ev-" + c.evidence; a.className = "cite"; a.textContent = text.slice(c.start, c.end);
    a.title = evidence[c.evidence - 1].path.join(" \u203a ");
    box.append(a);
    last = c.end;
  }
  box.append(document.createTextNode(text.slice(last)));
}

// The answer streams from the OpenAI-compatible endpoint (server-sent events): a first chunk
// carrying the evidence (shown at once, while the answer is written), content pieces, then a
// last chunk carrying the citations and the evidence again.
async function ask(body, onPiece, onEvidence) {
  const r = await fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "Authorization": "Bearer " + key(), "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(errorOf(await r.json().catch(() => ({})), r.status));
  const reader = r.body.getReader(), decoder = new TextDecoder();
  let buf = "", final = null, shown = false;
  for (;;) {
    const { value, done } = await reader.read();
    buf += decoder.decode(value || new Uint8Array(), { stream: !done });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, cut); buf = buf.slice(cut + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const payload = line.slice(6);
        if (payload === "[DONE]") continue;
        const chunk = JSON.parse(payload);
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (chunk.evidence && !shown) { shown = true; onEvidence(chunk.evidence); }
        if (delta && delta.content) onPiece(delta.content);
        if (chunk.evidence && chunk.citations) final = chunk;
      }
    }
    if (done) break;
  }
  if (!final) throw new Error("the answer stream ended early; please ask again");
  return final;
}

function connect() {
  if (useKey()) loadDomains();
}
$("connect").addEventListener("click", connect);
$("key").addEventListener("keydown", (e) => {      // Enter in the key box: "Use key"
  if (e.key === "Enter") { e.preventDefault(); connect(); }
});
$("domain").addEventListener("change", fillVersions);
$("ask").addEventListener("submit", async (e) => {
  e.preventDefault();
  if ($("submit").getAttribute("aria-disabled") === "true") return;     // one question at a time
  const question = $("question").value.trim();
  if (!question) { setStatus("Type a question first.", "error"); return; }
  const used = useKey();                              // the key in the box, pressed "Use key" or not
  if (!used) return;
  const body = { model: "vdgr", stream: true, messages: [{ role: "user", content: question }] };
  if ($("domain").value) body.domain = $("domain").value;
  if ($("version").value) body.version = $("version").value;
  if (used === "changed") loadDomains(true);          // the new key's domains, for the next question
  const answer = $("answer");
  $("submit").setAttribute("aria-disabled", "true");    // not disabled: it keeps the keyboard focus
  answer.replaceChildren(); $("evidence").replaceChildren();
  answer.setAttribute("aria-busy", "true");
  setStatus("Searching the documents\u2026", "busy");
  let text = "", shown = null;
  try {
    const final = await ask(body, (piece) => {
      if (!text) setStatus("Writing the answer\u2026", "busy");
      text += piece;
      answer.textContent = text;
    }, (evidence) => {
      shown = evidence;
      renderEvidence(evidence, termPattern(question));
      setStatus("Writing the answer\u2026", "busy");      // the search is over: the LLM is asked
    });
    const evidence = final.evidence || [];
    if (JSON.stringify(evidence) !== JSON.stringify(shown)) renderEvidence(evidence, termPattern(question));
    renderAnswer(text.trim(), final.citations || [], evidence);
    setStatus(evidence.length ? evidence.length + (evidence.length === 1 ? " passage" : " passages") + " found"
                              : "Nothing found");
  } catch (err) {
    setStatus(err.message, "error");
  } finally {
    answer.setAttribute("aria-busy", "false");
    $("submit").setAttribute("aria-disabled", "false");
  }
});
if (key()) { $("key").value = key(); loadDomains(); }
