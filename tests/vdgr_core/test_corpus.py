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
