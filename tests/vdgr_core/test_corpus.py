import os

import pytest

from schemas.errors import ConfigError
from schemas.records import DocMeta
from vdgr_core.corpus import scan_corpus


def write(root, rel, text="x"):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture
def corpus(tmp_path):
    write(tmp_path, "README.md")
    write(tmp_path, "net/_meta.yaml", "version: '1.0'\nacl: [eng]\nproduct: orbit\n")
    write(tmp_path, "net/top.md")
    write(tmp_path, "net/routers/_meta.yaml", "title: Router Guides\nversion: '2.0'\n")
    write(tmp_path, "net/routers/x2/_meta.yaml", "acl: support\n")
    write(tmp_path, "net/routers/x2/reset.md")
    write(tmp_path, "net/routers/x2/Specs.HTML")
    write(tmp_path, "net/routers/setup.rst")
    write(tmp_path, "net/routers/image.png")
    write(tmp_path, "net/routers/.hidden.md")
    write(tmp_path, "net/.git/config.md")
    write(tmp_path, "hr/policies/leave.txt")
    return tmp_path


def test_tasks_sorted_and_skipped(corpus):
    scan = scan_corpus(str(corpus))
    assert [t.rel_path for t in scan.tasks] == [
        "hr/policies/leave.txt", "net/routers/setup.rst", "net/routers/x2/Specs.HTML",
        "net/routers/x2/reset.md", "net/top.md"]
    assert scan.skipped == ("README.md", "net/routers/image.png")
    # a file in no domain folder says so, in its own reason; a file of another type, its own
    assert scan.outside_domains == ("README.md",)
    assert (scan.dead_letter("README.md").reason, scan.dead_letter("README.md").domain) == ("outside_domain", "")
    assert (scan.dead_letter("net/routers/image.png").reason,
            scan.dead_letter("net/routers/image.png").domain) == ("unsupported_format", "net")


def test_domain_collection_folder_titles(corpus):
    tasks = {t.rel_path: t for t in scan_corpus(str(corpus)).tasks}
    t = tasks["net/routers/x2/reset.md"]
    assert (t.domain, t.collection, t.folder_titles) == ("net", "routers", ("Router Guides", "x2"))
    assert tasks["net/top.md"].collection == "" and tasks["net/top.md"].folder_titles == ()
    assert tasks["hr/policies/leave.txt"].folder_titles == ("policies",)


def test_meta_resolution(corpus):
    tasks = {t.rel_path: t for t in scan_corpus(str(corpus)).tasks}
    t = tasks["net/routers/x2/reset.md"]
    assert t.meta == DocMeta(version="2.0", acl=("support",), labels=(("product", "orbit"),))
    assert [m.version for m in t.folder_metas] == ["1.0", "2.0", "2.0"]
    assert [m.acl for m in t.folder_metas] == [("eng",), ("eng",), ("support",)]
    assert [m.title for m in t.folder_metas] == [None, "Router Guides", None]
    assert tasks["net/routers/setup.rst"].meta.acl == ("eng",)
    assert tasks["net/top.md"].meta.version == "1.0"
    assert tasks["hr/policies/leave.txt"].meta == DocMeta()


def test_malformed_meta_raises_with_path(corpus):
    write(corpus, "hr/policies/_meta.yaml", "acl: [a, b\n")
    with pytest.raises(ConfigError, match=r"policies.*_meta\.yaml"):
        scan_corpus(str(corpus))


def test_bad_group_in_meta_raises(corpus):
    write(corpus, "hr/_meta.yaml", "acl: ['not ok']\n")
    with pytest.raises(ConfigError, match="hr"):
        scan_corpus(str(corpus))


def test_missing_root(tmp_path):
    with pytest.raises(ConfigError):
        scan_corpus(str(tmp_path / "nope"))


def test_supported_filter(corpus):
    scan = scan_corpus(str(corpus), supported=(".md",))
    assert all(t.rel_path.endswith(".md") for t in scan.tasks)
    assert "net/routers/setup.rst" in scan.skipped


# --- scan rules: symlinks, loops, depth, names, special files -----------------------------------

def _reasons(scan) -> dict[str, str]:
    return {d.rel_path: d.reason for d in scan.rejected}


def test_symlink_out_of_the_root_is_refused(tmp_path):
    corpus, outside = tmp_path / "c", tmp_path / "outside"
    write(corpus, "net/a/x.md", "# A\n\nhello\n")
    write(outside, "secret.md", "# S\n\nsecret\n")
    write(outside, "dir/more.md", "# M\n\nmore\n")
    os.symlink(outside / "secret.md", corpus / "net" / "a" / "leak.md")
    os.symlink(outside / "dir", corpus / "net" / "linked")
    os.symlink("../../../outside/secret.md", corpus / "net" / "a" / "relative.md")
    scan = scan_corpus(str(corpus))
    assert [t.rel_path for t in scan.tasks] == ["net/a/x.md"]
    assert _reasons(scan) == {"net/a/leak.md": "outside_root", "net/linked": "outside_root",
                              "net/a/relative.md": "outside_root"}
    assert set(scan.skipped) == set(_reasons(scan))
    assert scan.dead_letter("net/linked").domain == "net"


def test_symlink_loop_is_walked_once(tmp_path):
    write(tmp_path, "net/a/x.md", "# A\n\nhello\n")
    os.symlink("..", tmp_path / "net" / "a" / "loop")
    os.symlink(str(tmp_path), tmp_path / "net" / "root")
    scan = scan_corpus(str(tmp_path))
    assert [t.rel_path for t in scan.tasks] == ["net/a/x.md"]
    assert _reasons(scan) == {"net/a/loop": "symlink_loop", "net/root": "symlink_loop"}


def test_symlinks_inside_the_root(tmp_path):
    """A symlinked file inside the root is a document at its own path; a symlinked folder whose
    real folder is scanned anyway is not walked twice, whatever the order of names."""
    write(tmp_path, "net/real/x.md", "# A\n\nhello\n")
    write(tmp_path, "net/.hidden/h.md", "# H\n\nhidden but linked\n")
    os.symlink("real", tmp_path / "net" / "alias")              # sorts before "real"
    os.symlink("real/x.md", tmp_path / "net" / "copy.md")
    os.symlink(".hidden", tmp_path / "net" / "shown")           # its only path: walked
    scan = scan_corpus(str(tmp_path))
    assert [t.rel_path for t in scan.tasks] == ["net/copy.md", "net/real/x.md", "net/shown/h.md"]
    assert _reasons(scan) == {"net/alias": "symlink_loop"}


def test_folders_below_a_symlinked_folder_are_known_by_their_real_paths(tmp_path):
    """Loops are found by real paths; a folder's real path is its parent's plus its name, also
    below a symlinked folder and under a root named through a link."""
    corpus = tmp_path / "corpus"
    write(corpus, "net/.hidden/sub/y.md", "# Y\n\nbelow a linked folder\n")
    os.symlink(".hidden", corpus / "net" / "shown")
    os.symlink("..", corpus / "net" / ".hidden" / "sub" / "back")     # .hidden again
    os.symlink("corpus", tmp_path / "via")
    scan = scan_corpus(str(tmp_path / "via"))
    assert [t.rel_path for t in scan.tasks] == ["net/shown/sub/y.md"]
    assert _reasons(scan) == {"net/shown/sub/back": "symlink_loop"}


def test_folders_sharing_a_meta_text_each_get_their_own_resolved_meta(tmp_path):
    for v in ("a", "b"):
        write(tmp_path, f"net/{v}/_meta.yaml", "version: '2'\nacl: [staff]\n")
        write(tmp_path, f"net/{v}/x.md", "# X\n\nsame meta text\n")
    write(tmp_path, "net/b/_meta.yaml", "version: '3'\n")
    scan = scan_corpus(str(tmp_path))
    assert [(t.rel_path, t.meta.version, t.meta.acl) for t in scan.tasks] == [
        ("net/a/x.md", "2", ("staff",)), ("net/b/x.md", "3", ())]


def test_folder_depth_is_bounded(tmp_path):
    write(tmp_path, "net/a/b/c/x.md", "# A\n\nhello\n")
    write(tmp_path, "net/a/b/c/d/deep.md", "# D\n\ndeep\n")
    scan = scan_corpus(str(tmp_path), max_depth=4)
    assert [t.rel_path for t in scan.tasks] == ["net/a/b/c/x.md"]
    assert _reasons(scan) == {"net/a/b/c/d": "too_deep"}


def test_folder_depth_on_an_object_store_listing(tmp_path, monkeypatch):
    """The object-store branch (pyarrow.fs listing, as for gs:// or s3://) has the same bound."""
    import vdgr_core.corpus as corpus_mod

    write(tmp_path, "net/a/b/x.md", "# A\n\nhello\n")
    write(tmp_path, "net/a/b/c/deep.md", "# D\n\ndeep\n")
    monkeypatch.setattr(corpus_mod, "beam_path", lambda uri: uri)   # keep file:// as a URI
    scan = scan_corpus(f"file://{tmp_path}", max_depth=3)
    assert [t.rel_path for t in scan.tasks] == ["net/a/b/x.md"]
    assert _reasons(scan) == {"net/a/b/c": "too_deep"}


def test_non_utf8_names_become_dead_letters(tmp_path):
    write(tmp_path, "net/a/x.md", "# A\n\nhello\n")
    root = os.fsencode(str(tmp_path))
    with open(root + b"/net/a/bad\xffname.md", "w") as f:
        f.write("# bad\n\nx\n")
    os.makedirs(root + b"/net/caf\xe9")
    with open(root + b"/net/caf\xe9/y.md", "w") as f:
        f.write("# y\n\ny\n")
    scan = scan_corpus(str(tmp_path))
    assert [t.rel_path for t in scan.tasks] == ["net/a/x.md"]
    assert _reasons(scan) == {"net/a/bad\\xffname.md": "invalid_name", "net/caf\\xe9": "invalid_name"}


def test_fifo_and_unlistable_folder_become_dead_letters(tmp_path):
    write(tmp_path, "net/a/x.md", "# A\n\nhello\n")
    os.mkfifo(tmp_path / "net" / "a" / "pipe.md")           # reading it would block forever
    os.symlink("nowhere.md", tmp_path / "net" / "a" / "dangling.md")
    locked = tmp_path / "net" / "locked"
    write(tmp_path, "net/locked/y.md", "# y\n\ny\n")
    os.chmod(locked, 0)
    try:
        scan = scan_corpus(str(tmp_path))
    finally:
        os.chmod(locked, 0o755)
    reasons = _reasons(scan)
    assert reasons.pop("net/a/pipe.md") == "not_regular_file"
    assert reasons.pop("net/a/dangling.md") == "not_regular_file"
    if os.geteuid() != 0:                    # root lists any folder
        assert reasons.pop("net/locked") == "read_error"
    assert reasons == {}


def test_meta_yaml_symlinked_out_of_the_root_stops_the_scan(tmp_path):
    corpus = tmp_path / "c"
    write(corpus, "net/a/x.md", "# A\n\nhello\n")
    write(tmp_path, "outside/_meta.yaml", "acl: [eng]\n")
    os.symlink(tmp_path / "outside" / "_meta.yaml", corpus / "net" / "_meta.yaml")
    with pytest.raises(ConfigError, match=r"_meta\.yaml.*outside the corpus root"):
        scan_corpus(str(corpus))
