import pytest

from schemas.errors import ConfigError
from schemas.records import DocMeta
from vdgr_core.metadata import apply_front_matter, load_meta_yaml, merge_meta, meta_from_mapping


def test_mapping_fields_and_labels():
    m = meta_from_mapping({"version": 2, "acl": ["ops", "eng", "ops"], "title": "Guides",
                           "product": "Orbit", "tier": 3, "beta": True, "tags": ["a", "b"],
                           "description": None})
    assert m == DocMeta(version="2", acl=("eng", "ops"), title="Guides",
                        labels=(("beta", "true"), ("product", "Orbit"), ("tier", "3")))


def test_single_acl_string_and_float_version():
    m = meta_from_mapping({"acl": "support@emea", "version": 2.5})
    assert m.acl == ("support@emea",) and m.version == "2.5"


@pytest.mark.parametrize("acl", ["has space", "x" * 65, "", ["ok", "bad/slash"], [{"a": 1}], {"a": 1}])
def test_invalid_acl_raises(acl):
    with pytest.raises(ConfigError):
        meta_from_mapping({"acl": acl})


def test_non_mapping_and_bad_version():
    with pytest.raises(ConfigError):
        meta_from_mapping(["a"])
    with pytest.raises(ConfigError):
        meta_from_mapping({"version": [1, 2]})
    assert meta_from_mapping(None) == DocMeta()


def test_load_meta_yaml_errors_name_the_problem():
    with pytest.raises(ConfigError, match=r"invalid YAML at line \d+, column \d+: .*expected"):
        load_meta_yaml("version: 1\nacl: [a, b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_meta_yaml("- a\n- b\n")
    assert load_meta_yaml("") == DocMeta()
    assert load_meta_yaml("version: '1.10'\n").version == "1.10"


def test_merge_inner_wins_and_labels_merge():
    outer = DocMeta(version="1", acl=("a",), title="Outer", labels=(("k", "1"), ("o", "x")))
    inner = DocMeta(version="", acl=("b",), title=None, labels=(("k", "2"), ("i", "y")))
    m = merge_meta(outer, inner)
    assert m == DocMeta(version="1", acl=("b",), title="Outer",
                        labels=(("i", "y"), ("k", "2"), ("o", "x")))


def test_apply_front_matter():
    base = DocMeta(version="1", acl=("eng",))
    m = apply_front_matter(base, {"version": "2", "title": "Doc", "acl": ("x", "y")})
    assert (m.version, m.acl, m.title) == ("2", ("x", "y"), "Doc")
    assert apply_front_matter(base, {}) == base
