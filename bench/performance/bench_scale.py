"""Scale benchmark: the EManual corpus grown to ~10k, ~100k and ~1M chunks, hashing embedder.

One command::

    python -m bench.performance.bench_scale [--sizes 10k,100k,1m] [--skip-1m] [--work bench/work/scale]

For each size the EManual corpus (S10 + 32 manuals, ~10.7k chunks) is grown into N product
versions (``bench/prepare/grow_corpus.py``: 1, 10 or 100 versions) and, each step a fresh process:

- ``vdgr index --embedding hashing`` with the default runner choice (``--preset auto``: in
  process below ``AUTO_WORKERS_MIN_DOCUMENTS`` documents, one SDK worker process per core from
  there): wall time, chunks/s, peak RSS of the driver process (``VmHWM``) and of its child
  processes (sampled ``VmRSS``: the worker processes and the vector index child), index size;
- a query process: ``KnowledgeBase.open`` time, then the 50 S10 questions (S10 domain given)
  once per route configuration (``bm25``, ``dense``, ``hybrid``, ``toc``, ``graph``, ``all
  routes``), interleaved question by question, then under ``default`` and ``all routes`` with
  no domain given (routing scores every domain), twice (the first pass reads the domains'
  layout pages, from disk where the page cache lost them: its major page faults are counted;
  the second finds them mapped); p50 / p95 of ``trace.timings_ms.total`` (query embedding
  included) and the process's peak RSS;
- ANN recall@10: for the S10 questions' vectors, the contents (and directories) table's top 10
  through its vector index against an exact scan (``bypass_vector_index``), scope-free; "exact"
  when the table is below ``StoreConfig.vector_index_min_rows`` and has no index;
- 1% update: every 100th document gets one paragraph (``grow_corpus.change_documents``), then
  ``vdgr update`` (settings recorded in the index): wall time, ratio to the build, peak RSS;
- with ``--check-rebuild`` (default for sizes up to 10k): a fresh build of the changed corpus,
  whose build id must equal the updated index's (update == rebuild);
- with ``--check-direct SIZES``: a build through ``--preset direct`` (everything in one
  process, the runner before the automatic choice): its wall time, chunks/s, driver peak RSS,
  and whether its build id equals the default build's.

Results: ``bench/out/scale.json`` and the ``scale`` block of BENCHMARKS.md (command, date,
commit, machine). ``--skip-1m`` (or ``--sizes 10k,100k``) leaves the 1M point out; nothing is
written for a size that was not run.
"""
from __future__ import annotations

from bench.report.markdown import machine_line

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.common import REPO, fresh_dir

SIZES = {"10k": 1, "100k": 10, "1m": 100}        # label -> product versions per manual
S10_QUESTIONS = REPO.parent / "shared" / "bench" / "emanual" / "s10_50_questions.csv"
S10_DOMAIN = "Galaxy_S10"


def vdgr_argv() -> list[str]:
    """The `vdgr` script beside the running interpreter, else ``python -m runners.cli``."""
    exe = Path(sys.executable).with_name("vdgr")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "runners.cli"]


def _env() -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "PYTHONPATH": str(REPO) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}


def proc_status_kb(pid: int, field: str) -> int:
    """``field`` (kB) of ``/proc/<pid>/status``; 0 when the process or the field is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return 0


def descendants(pid: int) -> list[int]:
    """Every child, grandchild, ... of ``pid`` alive now (``/proc/<pid>/task/*/children``)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", encoding="ascii") as f:
                    kids = [int(x) for x in f.read().split()]
                out += kids
                todo += kids
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def measured_run(cmd: list[str], log: Path, on_start=None) -> dict:
    """Run ``cmd``; wall seconds, the process's peak RSS (VmHWM, sampled until exit; rusage as
    a floor), the largest sampled RSS of any child process, in MB, and its CPU seconds (user and
    system, its waited-for children included). ``on_start(pid)`` is called once it started.
    Exits on failure."""
    log.parent.mkdir(parents=True, exist_ok=True)
    peak = {"driver": 0, "children": 0}
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, env=_env(), stdout=f, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak["driver"] = max(peak["driver"], proc_status_kb(proc.pid, "VmHWM"))
                for c in descendants(proc.pid):
                    peak["children"] = max(peak["children"], proc_status_kb(c, "VmRSS"))
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        if on_start is not None:
            on_start(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed (rc={proc.returncode}): {' '.join(cmd)}; see {log}")
    driver_mb = max(peak["driver"], 0) / 1024
    return {"wall_s": round(wall, 1), "driver_peak_mb": round(driver_mb),
            "children_peak_mb": round(peak["children"] / 1024),
            "rusage_peak_mb": round(usage.ru_maxrss / 1024), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1)}


def stages_of(log: Path) -> dict:
    """The stage timings ``vdgr index`` / ``vdgr update`` print (``stages (s)  scan_s 0.4, ...``)."""
    for line in reversed(log.read_text(encoding="utf-8", errors="replace").splitlines()):
        if line.strip().startswith("stages (s)"):
            parts = line.strip()[len("stages (s)"):].split(",")
            return {k: float(v) for k, v in (p.split() for p in parts if len(p.split()) == 2)}
    return {}


def du_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2 ** 20, 1)


def grown_corpus(work: Path, label: str, versions: int) -> Path:
    """The grown corpus of ``label`` (written again when missing or changed by an update)."""
    corpus = work / f"corpus_{label}"
    stamp = work / f"corpus_{label}.stamp.json"
    key = {"versions": versions, "grow": "bench.grow_corpus v1"}  # the stamp of grown corpora on disk: kept
    if corpus.is_dir() and stamp.exists() and json.loads(stamp.read_text()) == key:
        return corpus
    stamp.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "bench.prepare.grow_corpus", "--out", str(corpus), "--versions", str(versions)],
                   cwd=REPO, env=_env(), check=True)
    stamp.write_text(json.dumps(key))
    return corpus


def questions() -> list[str]:
    with open(S10_QUESTIONS, encoding="utf-8", newline="") as f:
        return [r["question"] for r in csv.DictReader(f)]


# run in a fresh process: open time, per-route latency, peak RSS, ANN recall@10
_QUERY = r"""
import json, sys, time
UNSCOPED = ("default", "all routes")
t0 = time.perf_counter()
import numpy as np
from schemas.config import EmbeddingConfig, QueryConfig
from vdgr_core.query.knowledge_base import KnowledgeBase
imported = time.perf_counter() - t0
index, domain, qfile = sys.argv[1], sys.argv[2], sys.argv[3]
questions = json.load(open(qfile))
off = dict(backtrack=False, reflection=False, routing=False)
configs = {"bm25": dict(routes=("bm25",), **off), "dense": dict(routes=("dense",), **off),
           "hybrid": dict(routes=("hybrid",), **off), "toc": dict(routes=("toc",), **off),
           "graph": dict(routes=("graph",), **off), "default": dict(),
           "all routes": dict(routes=("hybrid", "toc", "graph"), backtrack=True, reflection=True, routing=True)}
from vdgr_core.store.manifest import read_manifest
m = read_manifest(index)
emb = EmbeddingConfig.for_index(m.embedding_model, m.dim)
def rss_mb():
    return round([int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")][0] / 1024)
t1 = time.perf_counter()
base = KnowledgeBase.open(index, QueryConfig(embedding=emb, **configs["all routes"]))
open_s = time.perf_counter() - t1
open_rss = rss_mb()
kbs = {name: KnowledgeBase(base.reader, base.data, QueryConfig(embedding=emb, **flags), base.embedder,
                           vectors=base.vectors) for name, flags in configs.items()}
for kb in kbs.values():
    for q in questions[:3]:
        kb.query(q, domain=domain)
def status_kb(field):
    return [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(field + ":")][0]
anon_peak = 0       # anonymous memory (what the process holds; RSS also counts mapped file pages)
def timed(kb, q, dom):
    global anon_peak
    ms = kb.query(q, domain=dom).trace.timings_ms["total"]
    anon_peak = max(anon_peak, status_kb("RssAnon"))
    return ms
lat = {n: [] for n in kbs}
for q in questions:
    for n, kb in kbs.items():
        lat[n].append(timed(kb, q, domain))
# the query process's peak while answering with the domain given (the recall measurement below
# scans whole tables without the index, which no query does)
answering_hwm = status_kb("VmHWM")
# the same questions with no domain given: routing scores every domain (a cascade once their
# directories pass exact_max_rows rows, vdgr_core/query/routing.py)
def major_faults():
    return int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[9])
faults0 = major_faults()
for n in UNSCOPED:
    kbs[n].query(questions[0])
    lat[n + " (no domain)"] = [timed(kbs[n], q, None) for q in questions]
# pages read from disk while answering them (0: the layouts were in the page cache)
no_domain_major_faults = major_faults() - faults0
# the same again: every domain's layout pages now mapped and cached (a running service)
for n in UNSCOPED:
    lat[n + " (no domain, again)"] = [timed(kbs[n], q, None) for q in questions]
no_domain_hwm = status_kb("VmHWM")

def pct(v, p):
    v = sorted(v)
    return round(v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))], 1)

# ANN recall@10 against an exact scan of the same rows (LanceDB without its vector index, the
# same prefilter). A returned row counts when its distance is within 1e-6 of the exact 10th
# (ann-benchmarks' definition: the grown corpus repeats texts across versions, so rows of equal
# distance are interchangeable). Two measurements per vector table:
# - "index": the index alone, top 10 of a limit-10 search with the query side's nprobes, ef and
#   refine factor, the question's domain as prefilter (scoped) and scope-free (unscoped);
# - "routes": every vector search the query side makes while answering the questions under
#   the "all routes" configuration, with the domain given (scoped) and without it (routing
#   picks domains, searching the directories of all of them); the top 10 of what each search
#   returned (a route asks for more rows than 10: its k, twice over) against the exact top 10.
from vdgr_core.query.scope import QueryScope
from vdgr_core.store.filters import SearchScope
cfg = base.config
qvecs = base.embedder.embed(questions)
KEY = {"contents": "chunk_id", "directories": "node_id"}

def exact_10th(table, v, where):
    q = base.reader.table(table).search(np.asarray(v, dtype=np.float32)).metric("cosine").limit(10)
    if where is not None:
        q = q.where(where, prefilter=True)
    d = q.select([KEY[table], "_distance"]).bypass_vector_index().to_arrow().column("_distance").to_pylist()
    return d[-1] if len(d) == 10 else None

def tie_hits(dist, tenth):
    if tenth is None:
        return None
    return int(sum(1 for x in sorted(dist)[:10] if x <= tenth + 1e-6))

recall = {}
for table in ("contents", "directories"):
    t = base.reader.table(table)
    if table not in m.vector_indexes:
        recall[table] = {"index": {"scoped": "exact", "unscoped": "exact"}}
        continue
    out = {}
    for label, scope in (("scoped", QueryScope(SearchScope(domains=(domain,)))), ("unscoped", None)):
        hits = total = 0
        where = scope.lance_expr() if scope is not None else None
        for v in qvecs:
            q = t.search(np.asarray(v, dtype=np.float32)).metric("cosine").limit(10).select([KEY[table], "_distance"])
            if where is not None:
                q = q.where(where, prefilter=True)
            q = q.nprobes(cfg.ann_nprobes).refine_factor(cfg.ann_refine_factor)
            if cfg.ann_ef is not None:
                q = q.ef(max(cfg.ann_ef, 10 * cfg.ann_refine_factor))
            got = q.to_arrow().column("_distance").to_pylist()
            h = tie_hits(got, exact_10th(table, v, where))
            if h is not None:
                hits, total = hits + h, total + 10
        out[label] = round(hits / max(1, total), 3)
    recall[table] = {"index": out}

calls = []
vs = base.vectors
original = vs._lance
def recording(table, q, scope, k, mask):
    got = original(table, q, scope, k, mask)
    calls.append((table, np.array(q, dtype=np.float32), scope.lance_expr(), [1.0 - s for _, s in got]))
    return got
vs._lance = recording
routes = {}
for label, dom in (("scoped", domain), ("unscoped", None)):
    calls.clear()
    for qtext in questions:
        kbs["all routes"].query(qtext, domain=dom)
    per = {}
    for table, v, where, dist in calls:
        h = tie_hits(dist, exact_10th(table, v, where))
        if h is not None:
            a = per.setdefault(table, [0, 0, 0])
            a[0], a[1], a[2] = a[0] + h, a[1] + 10, a[2] + 1
    routes[label] = {t: {"recall": round(a[0] / a[1], 3), "searches": a[2]} for t, a in per.items()}
vs._lance = original
for table in recall:
    if "exact" not in recall[table]["index"].values():
        # "scan": no search of that kind went to the vector index (its scope was small enough to
        # scan the layouts' vectors exactly, vdgr_core/query/vectors.py)
        recall[table]["routes"] = {lab: routes[lab].get(table, {}).get("recall", "scan")
                                   for lab in ("scoped", "unscoped")}
        recall[table]["route_searches"] = {lab: routes[lab].get(table, {}).get("searches", 0)
                                           for lab in ("scoped", "unscoped")}
hwm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"open_s": round(open_s, 3), "import_s": round(imported, 2), "open_rss_mb": open_rss,
                  "query_peak_mb": round(answering_hwm / 1024), "query_no_domain_peak_mb": round(no_domain_hwm / 1024),
                  "query_anon_peak_mb": round(anon_peak / 1024), "recall_scan_peak_mb": round(hwm / 1024),
                  "no_domain_major_faults": no_domain_major_faults,
                  "latency": {n: {"p50_ms": pct(v, 50), "p95_ms": pct(v, 95), "n": len(v)} for n, v in lat.items()},
                  "ann_recall_at_10": recall, "ann": {"nprobes": cfg.ann_nprobes, "refine_factor": cfg.ann_refine_factor,
                                                      "ef": cfg.ann_ef}}))
"""


def _build_id(index: Path) -> str:
    return json.loads((index / "manifest.json").read_text())["build_id"]


def _count(index: Path, key: str) -> int:
    return int(json.loads((index / "manifest.json").read_text())["counts"].get(key, 0))


QUERY_FIELDS = ("open_s", "import_s", "query_peak_mb", "query_no_domain_peak_mb", "query_anon_peak_mb",
                "recall_scan_peak_mb", "no_domain_major_faults", "latency", "ann_recall_at_10")


def measure_queries(index: Path, work: Path, label: str) -> dict:
    """One fresh query process on ``index`` (see ``_QUERY``): open, latency, peaks, ANN recall."""
    qfile = work / "questions.json"
    qfile.write_text(json.dumps(questions()))
    qlog = work / "logs" / f"query_{label}.log"
    qlog.parent.mkdir(parents=True, exist_ok=True)
    out = subprocess.run([sys.executable, "-c", _QUERY, str(index), S10_DOMAIN, str(qfile)], cwd=REPO, env=_env(),
                         capture_output=True, text=True)
    qlog.write_text(out.stdout + out.stderr)
    if out.returncode != 0:
        raise SystemExit(f"query process failed; see {qlog}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_size(label: str, versions: int, work: Path, check_rebuild: bool, check_direct: bool = False) -> dict:
    from bench.prepare.grow_corpus import change_documents

    logs = work / "logs"
    corpus = grown_corpus(work, label, versions)
    documents = sum(1 for _ in corpus.rglob("*.md"))
    index = fresh_dir(work / f"index_{label}")
    shutil.rmtree(index)
    build = measured_run([*vdgr_argv(), "index", str(corpus), "--index", str(index), "--embedding", "hashing", "-q"],
                         logs / f"build_{label}.log")
    chunks = _count(index, "contents")
    direct = {}
    if check_direct:
        direct_index = work / f"direct_{label}"
        shutil.rmtree(direct_index, ignore_errors=True)
        d = measured_run([*vdgr_argv(), "index", str(corpus), "--index", str(direct_index), "--embedding", "hashing",
                          "--preset", "direct", "-q"], logs / f"build_direct_{label}.log")
        direct = {"direct_build_s": d["wall_s"], "direct_chunks_per_s": round(chunks / d["wall_s"]),
                  "direct_driver_peak_mb": d["driver_peak_mb"],
                  "direct_equals_default": _build_id(direct_index) == _build_id(index)}
        shutil.rmtree(direct_index, ignore_errors=True)
    query = measure_queries(index, work, label)
    size_mb = du_mb(index)
    (work / f"corpus_{label}.stamp.json").unlink(missing_ok=True)     # the corpus is about to change
    changed = change_documents(corpus, 100, "S")
    update = measured_run([*vdgr_argv(), "update", str(corpus), "--index", str(index), "-q"],
                          logs / f"update_{label}.log")
    result = {
        "size": label, "versions": versions, "documents": documents, "chunks": chunks,
        "directories": _count(index, "directories"), "entities": _count(index, "entities"),
        "build_s": build["wall_s"], "chunks_per_s": round(chunks / build["wall_s"]),
        "build_driver_peak_mb": build["driver_peak_mb"], "build_children_peak_mb": build["children_peak_mb"],
        "build_rusage_peak_mb": build["rusage_peak_mb"], "index_mb": size_mb,
        **{k: query[k] for k in QUERY_FIELDS},
        "update_documents": len(changed), "update_s": update["wall_s"],
        "update_ratio": round(update["wall_s"] / build["wall_s"], 3),
        "update_driver_peak_mb": update["driver_peak_mb"], "update_rusage_peak_mb": update["rusage_peak_mb"],
        "build_stages_s": stages_of(logs / f"build_{label}.log"),
        "update_stages_s": stages_of(logs / f"update_{label}.log"),
        **direct,
    }
    if check_rebuild:
        rebuilt = work / f"rebuild_{label}"
        shutil.rmtree(rebuilt, ignore_errors=True)
        measured_run([*vdgr_argv(), "index", str(corpus), "--index", str(rebuilt), "--embedding", "hashing", "-q"],
                     logs / f"rebuild_{label}.log")
        result["update_equals_rebuild"] = _build_id(rebuilt) == _build_id(index)
        shutil.rmtree(rebuilt, ignore_errors=True)
    return result


ROUTES = ("bm25", "dense", "hybrid", "toc", "graph", "default", "all routes", "default (no domain)",
          "all routes (no domain)", "default (no domain, again)", "all routes (no domain, again)")


def _recall(rec) -> str:
    if isinstance(rec, dict) and "index" in rec:           # index alone; as the routes search
        text = f"{rec['index'].get('scoped')} / {rec['index'].get('unscoped')}"
        if "routes" in rec:
            text += f"; routes {rec['routes'].get('scoped')} / {rec['routes'].get('unscoped')}"
        return text
    if isinstance(rec, dict):                               # rows of earlier runs
        return f"{rec.get('scoped')} / {rec.get('unscoped')}"
    return str(rec)


def query_rss(r: dict) -> str:
    """The query process's peak RSS with the domain given; with none given and the peak of its
    anonymous memory when measured (RSS counts the layout pages a process has mapped)."""
    out = f"{r['query_peak_mb']:,}"
    if r.get("query_no_domain_peak_mb") is not None:
        out += f"; no domain {r['query_no_domain_peak_mb']:,}"
    if r.get("query_anon_peak_mb") is not None:
        out += f"; anonymous {r['query_anon_peak_mb']:,}"
    return out


def render(report: dict) -> str:
    """Markdown block of the scale report."""
    lines = ["### scale (hashing embedder, default runner choice)", "",
             "- runner: `--preset auto`, the default since e101a7c: in process below 4,000 documents, one SDK "
             "worker process per core from there (2 here; rows measured before e101a7c ran in process)",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report['commit']}",
             machine_line(report["machine"]) + " (shared with other developers; timings noisy)",
             "- corpus: EManual S10 + 32 manuals grown into N versions per manual (`bench/prepare/grow_corpus.py`); "
             "update: 1% of the documents (every 100th) get one paragraph; query: the 50 S10 questions, "
             "domain given (\"no domain\": the same questions without it, routing scores every domain; "
             "\"again\": those a second time, every domain's layout pages mapped and cached, as in a running "
             "service), one process, `trace.timings_ms.total` (query embedding included)",
             "- open: `KnowledgeBase.open` (reads the manifest; layouts are memory-mapped on first use); "
             "query RSS: the query process's peak (`VmHWM`, memory-mapped pages it touched included) "
             "after answering the questions under every configuration with the domain given; \"no domain\": "
             "after the questions without it too; \"anonymous\": the largest `RssAnon` read after each "
             "question (what the process holds; the rest is file pages the kernel can drop); all before the "
             "recall measurement (whose exact scans read whole tables, which no query does: "
             "`recall_scan_peak_mb` in the JSON)",
             "- ANN recall@10 against an exact scan of the same rows and prefilter, a row counting when its "
             "distance is within 1e-6 of the exact 10th (ann-benchmarks; versions repeat texts, so equal "
             "distances are interchangeable): first the index alone (limit 10, the query side's `ann_nprobes`, "
             "`ann_refine_factor`, `ann_ef`), the question's domain as prefilter / scope-free; then (\"routes\") the top "
             "10 of every vector search the query side sent to the index answering the questions under all routes, with "
             "the domain given / without it (routing searches every domain's directories); \"scan\" when "
             "none of those searches went to the index (a scope of at most `exact_max_rows` rows scans its "
             "domains' layout vectors exactly); \"exact\" when the table has no vector index", ""]
    if report.get("not_run"):
        lines += [f"- not run: {', '.join(report['not_run'])} (this table has no figure for it)", ""]
    rows = report["results"]
    if any(r.get("commit") for r in rows):
        lines += ["Each size was measured by the command, at the commit and on the date below:", ""]
        lines += [f"- {r['chunks']:,} chunks: `{r.get('command', report['command'])}` at {r.get('commit', report['commit'])}, "
                  f"{r.get('date', report['date'])}"
                  + (f"; open, query RSS, latency and ANN recall: `{r['query_command']}` at {r['query_commit']}, "
                     f"{r['query_date']} (on the index that run built, after its 1% update and any later ones)"
                     if r.get("query_command") else "")
                  + (f"; 1% update: `{r['update_command']}` at {r['update_commit']}, {r['update_date']} (on the "
                     "index and corpus as the earlier runs left them, its ratio to the build above)"
                     if r.get("update_command") else "")
                  for r in rows]
        lines += [""]
    lines += ["| chunks | documents | build s | chunks/s | build peak RSS MB (driver / children) | index MB | "
              "open s | query RSS MB | 1% update s | update / build | update peak RSS MB | ANN recall@10 "
              "contents: index scoped / unscoped; routes scoped / unscoped | directories (same) | update == rebuild |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        rec = r["ann_recall_at_10"]
        lines.append(
            f"| {r['chunks']:,} | {r['documents']:,} | {r['build_s']} | {r['chunks_per_s']} | "
            f"{r['build_driver_peak_mb']:,} / {r['build_children_peak_mb']:,} | {r['index_mb']:,} | {r['open_s']} | "
            f"{query_rss(r)} | {r['update_s']} | {r['update_ratio']} | {r['update_driver_peak_mb']:,} | "
            f"{_recall(rec['contents'])} | {_recall(rec['directories'])} | "
            f"{r.get('update_equals_rebuild', 'not checked')} |")
    lines += ["", "| chunks | " + " | ".join(f"{n} p50 / p95 ms" for n in ROUTES) + " |",
              "|---|" + "---|" * len(ROUTES)]
    for r in report["results"]:
        lat = r["latency"]
        lines.append(f"| {r['chunks']:,} | " + " | ".join(
            f"{lat[n]['p50_ms']} / {lat[n]['p95_ms']}" if n in lat else "-" for n in ROUTES) + " |")
    faults = [r for r in report["results"] if r.get("no_domain_major_faults") is not None]
    if faults:
        lines += ["", "Major page faults of the query process during the first no-domain pass (pages read from "
                  "disk; 0: the layouts were in the page cache): " + ", ".join(
                      f"{r['chunks']:,} chunks {r['no_domain_major_faults']:,}" for r in faults)]
    staged = [r for r in report["results"] if r.get("build_stages_s")]
    if staged:
        lines += ["", "Where the time goes (the stage timings `vdgr index` and `vdgr update` print, seconds):", "",
                  "| chunks | build stages | 1% update stages |", "|---|---|---|"]
        lines += [f"| {r['chunks']:,} | " + " | ".join(
            ", ".join(f"{k} {v}" for k, v in r.get(key, {}).items()) or "-"
            for key in ("build_stages_s", "update_stages_s")) + " |" for r in staged]
    direct = [r for r in report["results"] if "direct_build_s" in r]
    if direct:
        lines += ["", "In process (`--preset direct`, one process), same corpus, same run:", "",
                  "| chunks | build s | chunks/s | driver peak RSS MB | build id equals the default build's |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['chunks']:,} | {r['direct_build_s']} | {r['direct_chunks_per_s']} | "
                  f"{r['direct_driver_peak_mb']:,} | {r['direct_equals_default']} |" for r in direct]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10k,100k,1m", help="comma list of " + ", ".join(SIZES))
    ap.add_argument("--skip-1m", action="store_true", help="leave the 1M-chunk point out")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work" / "scale")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "scale.json")
    ap.add_argument("--check-rebuild", default="10k", help="sizes whose update is compared with a rebuild")
    ap.add_argument("--check-direct", default="", help="sizes also built with --preset direct (in process)")
    ap.add_argument("--no-markdown", action="store_true", help="do not merge the table into BENCHMARKS.md")
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows of sizes not run now from the last report (each row names its own "
                         "command, commit and date)")
    ap.add_argument("--query-only", action="store_true",
                    help="measure the query process again on each size's existing index (bench/work/scale/"
                         "index_<size>, as the last run left it: built, then updated) and replace those "
                         "fields of the size's row in the last report; the row names this command too, "
                         "the block's header names this command and commit")
    ap.add_argument("--update-only", action="store_true",
                    help="measure the 1%% update again on each size's existing index and corpus (another "
                         "paragraph appended to every 100th document) and replace the update fields of the "
                         "size's row in the last report; its ratio is to the build that row measured")
    a = ap.parse_args(argv)
    sizes = [s for s in a.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        ap.error(f"unknown sizes {unknown}; choose from {list(SIZES)}")
    not_run = [s for s in SIZES if s not in sizes or (a.skip_1m and s == "1m")]
    sizes = [s for s in sizes if s not in not_run]
    a.work.mkdir(parents=True, exist_ok=True)
    from bench.report.provenance import commit

    command = "python -m bench.performance.bench_scale " + " ".join(argv if argv is not None else sys.argv[1:])
    if a.query_only:
        return requery(a, sizes, command)
    if a.update_only:
        return reupdate(a, sizes, command)
    results = []
    for label in sizes:
        print(f"[bench_scale] {label} ...", flush=True)
        r = run_size(label, SIZES[label], a.work, label in a.check_rebuild.split(","),
                     label in a.check_direct.split(","))
        results.append({**r, "command": command, "commit": commit(),
                        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})
        print(json.dumps(results[-1]), flush=True)
    if a.keep and a.out.exists():      # sizes not run now keep the rows of the run that measured them
        earlier = json.loads(a.out.read_text()).get("results", [])
        kept = [r for r in earlier if r.get("size") not in {x["size"] for x in results} and "commit" in r]
        results = sorted(kept + results, key=lambda r: list(SIZES).index(r["size"]))
        not_run = [s for s in not_run if s not in {r["size"] for r in results}]
    write_report(a, command, results, not_run)
    return 0


def requery(a, sizes: list[str], command: str) -> int:
    """``--query-only``: the query fields of each size's row measured again on its index."""
    from bench.report.provenance import commit

    report = json.loads(a.out.read_text())
    rows = {r["size"]: r for r in report["results"]}
    for label in sizes:
        index = a.work / f"index_{label}"
        if label not in rows or not (index / "manifest.json").exists():
            raise SystemExit(f"no row or no index for {label}: run the full measurement first")
        print(f"[bench_scale] queries on {index} ...", flush=True)
        q = measure_queries(index, a.work, label)
        rows[label].update({k: q[k] for k in QUERY_FIELDS}, query_command=command, query_commit=commit(),
                           query_date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        print(json.dumps(rows[label]), flush=True)
    write_report(a, command, [rows[s] for s in SIZES if s in rows], report.get("not_run", []))
    return 0


UPDATE_FIELDS = ("update_documents", "update_s", "update_ratio", "update_driver_peak_mb", "update_rusage_peak_mb",
                 "update_stages_s")


def reupdate(a, sizes: list[str], command: str) -> int:
    """``--update-only``: the update fields of each size's row measured again on its index."""
    from bench.prepare.grow_corpus import change_documents
    from bench.report.provenance import commit

    report = json.loads(a.out.read_text())
    rows = {r["size"]: r for r in report["results"]}
    for label in sizes:
        index, corpus = a.work / f"index_{label}", a.work / f"corpus_{label}"
        if label not in rows or not (index / "manifest.json").exists() or not corpus.is_dir():
            raise SystemExit(f"no row, index or corpus for {label}: run the full measurement first")
        (a.work / f"corpus_{label}.stamp.json").unlink(missing_ok=True)     # the corpus changes
        tag = "R" + time.strftime("%H%M%S", time.gmtime())                  # a change not made before
        changed = change_documents(corpus, 100, tag)
        print(f"[bench_scale] update of {len(changed)} documents on {index} ...", flush=True)
        log = a.work / "logs" / f"update_{label}.log"
        update = measured_run([*vdgr_argv(), "update", str(corpus), "--index", str(index), "-q"], log)
        row = rows[label]
        row.update(update_documents=len(changed), update_s=update["wall_s"],
                   update_ratio=round(update["wall_s"] / row["build_s"], 3),
                   update_driver_peak_mb=update["driver_peak_mb"], update_rusage_peak_mb=update["rusage_peak_mb"],
                   update_stages_s=stages_of(log), update_command=command, update_commit=commit(),
                   update_date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        print(json.dumps(row), flush=True)
    write_report(a, command, [rows[s] for s in SIZES if s in rows], report.get("not_run", []))
    return 0


def write_report(a, command: str, results: list[dict], not_run: list[str]) -> None:
    from bench.report.provenance import stamp
    from bench.report.update_benchmarks_md import publish

    report = {**stamp(command), "results": results, "not_run": not_run}
    publish(report, a.out, "scale", render(report), markdown=not a.no_markdown)


if __name__ == "__main__":
    sys.exit(main())
