"""Debian documentation packages as corpora: real reference manuals nobody here wrote.

``python -m bench.prepare.debian_docs [--set servers|sqlite-python|tools] [--out DIR]``

Three sets (:data:`SETS`), each with its own question file under ``bench/data``. Packages are
fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` (never committed), each one
domain of the corpus, its HTML files laid out as the package installs them under
``/usr/share/doc``.

``servers`` (``bench/work/debian``; bench/data/debian_questions.jsonl), five packages:

- ``bind9`` (bind9-doc): the BIND 9 Administrator Reference Manual (Sphinx; statements and
  options as definition lists with grammar, blocks and tags fields);
- ``haproxy`` (haproxy-doc): the configuration and management manuals (each one page with
  hundreds of keywords) and the Lua API reference;
- ``git`` (git-doc): the git man pages as HTML (AsciiDoc definition lists of options);
- ``zsh`` (zsh-common, from zsh-doc): the Z shell manual (Texinfo HTML: options, builtins and
  parameters as definition lists);
- ``rsyslog`` (rsyslog-doc): the rsyslog documentation (Sphinx; module parameters as sections
  with a type / default / mandatory table).

``sqlite-python`` (``bench/work/debian2``; bench/data/debian2_questions.jsonl), a second set
written later, on which nothing was chosen before it existed:

- ``sqlite`` (sqlite3-doc): SQLite's documentation (the SQL language pages, ``pragma.html``
  with every PRAGMA on one page, the CLI, the C interface one page a function, release logs);
- ``python`` (python3.11-doc): the Python 3.11 documentation (library reference as Sphinx
  definition lists of functions, classes and options; tutorial, how-tos, FAQ, C API).

``tools`` (``bench/work/debian3``; bench/data/debian3_questions.jsonl), a third set, written
after the other two, on which nothing was chosen before it existed:

- ``ffmpeg`` (ffmpeg-doc): the FFmpeg manuals (Texinfo HTML: the tools, codecs, formats,
  protocols and filters, each page with hundreds of options as definition lists; the
  ``*-all.html`` pages repeat the component pages in one);
- ``vim`` (vim-doc): Vim's help files as HTML (the user manual and the reference manual, one
  page a help file: commands, options and their defaults as preformatted text);
- ``debref`` (debian-reference-en): the Debian Reference (DocBook HTML, one page a chapter, as
  installed under ``/usr/share/debian-reference``: a how-to book on system administration, with
  tables of packages and commands).

Only ``.html`` files are taken (the packages also ship the sources of their pages as ``.txt``,
the same text again). The versions fetched are written to ``<out>/versions.json``: gold answers
were located in these versions (bench/data/debian_questions.jsonl names them).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import REPO

WORK = REPO / "bench" / "work" / "debian"
# domain -> (Debian package, folder of the unpacked package whose HTML files become the domain)
PACKAGES: dict[str, tuple[str, str]] = {
    "bind9": ("bind9-doc", "usr/share/doc/bind9-doc"),
    "haproxy": ("haproxy-doc", "usr/share/doc/haproxy"),
    "git": ("git-doc", "usr/share/doc/git-doc"),
    "zsh": ("zsh-doc", "usr/share/doc/zsh-common"),
    "rsyslog": ("rsyslog-doc", "usr/share/doc/rsyslog-doc"),
}


@dataclass(frozen=True)
class DocSet:
    """One corpus of Debian documentation packages and the questions written from it."""

    name: str
    #: domain -> (Debian package, folder of the unpacked package whose HTML files become the domain)
    packages: dict
    work: Path
    questions: Path


SETS: dict[str, DocSet] = {
    "servers": DocSet("servers", PACKAGES, WORK, REPO / "bench" / "data" / "debian_questions.jsonl"),
    "sqlite-python": DocSet("sqlite-python", {
        "sqlite": ("sqlite3-doc", "usr/share/doc/sqlite3"),
        "python": ("python3.11-doc", "usr/share/doc/python3.11/html"),
    }, REPO / "bench" / "work" / "debian2", REPO / "bench" / "data" / "debian2_questions.jsonl"),
    "tools": DocSet("tools", {
        "ffmpeg": ("ffmpeg-doc", "usr/share/doc/ffmpeg/manual"),
        "vim": ("vim-doc", "usr/share/doc/vim/html"),
        "debref": ("debian-reference-en", "usr/share/debian-reference"),
    }, REPO / "bench" / "work" / "debian3", REPO / "bench" / "data" / "debian3_questions.jsonl"),
}


def package_versions(debs: Path) -> dict[str, str]:
    """Package -> version of each downloaded ``.deb`` (from ``dpkg-deb -f``)."""
    out = {}
    for deb in sorted(debs.glob("*.deb")):
        name, version = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Version"], check=True,
                                       capture_output=True, text=True).stdout.split("\n")[:2]
        out[name.split(":", 1)[1].strip()] = version.split(":", 1)[1].strip()
    return out


def fetch(work: Path = WORK, packages: dict = PACKAGES) -> Path:
    """Download and unpack ``packages`` once; lay their HTML files out as a corpus under
    ``work``; return it.

    Raises
    ------
    subprocess.CalledProcessError
        When ``apt-get download`` or ``dpkg-deb`` fails (no network to the Debian mirror).
    """
    corpus = work / "corpus"
    if (work / "versions.json").exists() and corpus.is_dir():
        return corpus
    debs, unpacked = work / "debs", work / "unpacked"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *(p for p, _ in packages.values())], cwd=debs, check=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    if corpus.exists():
        shutil.rmtree(corpus)
    for domain, (_, folder) in packages.items():
        root = unpacked / folder
        for src in sorted(root.rglob("*.html")):
            dst = corpus / domain / src.relative_to(root)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    (work / "versions.json").write_text(json.dumps(package_versions(debs), indent=1, sort_keys=True) + "\n")
    return corpus


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="servers", choices=sorted(SETS))
    ap.add_argument("--out", type=Path, default=None, help="default: the set's own work folder")
    args = ap.parse_args(argv)
    docset = SETS[args.set]
    args.out = args.out or docset.work
    corpus = fetch(args.out, docset.packages)
    counts = {d.name: sum(1 for _ in d.rglob("*.html")) for d in sorted(corpus.iterdir())}
    print(json.dumps({"corpus": str(corpus), "html_files": counts,
                      "versions": json.loads((args.out / "versions.json").read_text())}, indent=1))


if __name__ == "__main__":
    main()
