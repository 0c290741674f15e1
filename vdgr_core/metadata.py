"""Document metadata: _meta.yaml files, front matter, and how they override each other."""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional

import yaml

# libyaml's safe loader when the wheel has it (same results, ~10x faster; a scan reads every
# folder's _meta.yaml)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

from schemas.errors import ConfigError
from schemas.records import DocMeta

_GROUP = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
_RESERVED = frozenset({"version", "acl", "title"})


def _scalar_str(value: Any, key: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value).strip()
    raise ConfigError(f"{key!r} must be a string or a number, not {type(value).__name__}")


def _acl(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(f"'acl' must be a group name or a list of group names, "
                          f"not {type(value).__name__}")
    groups = set()
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise ConfigError(f"acl entry {item!r} is not a group name")
        name = str(item).strip()
        if not _GROUP.match(name):
            raise ConfigError(f"acl group name {name!r} must match {_GROUP.pattern}")
        groups.add(name)
    return tuple(sorted(groups))


def meta_from_mapping(d: Optional[Mapping[str, Any]]) -> DocMeta:
    """Build a DocMeta from a mapping (a _meta.yaml file or front matter).

    Parameters
    ----------
    d:
        ``version`` (numbers become strings), ``acl`` (one group name or a list),
        ``title``, and any other scalar keys, kept as sorted string labels. Keys whose
        value is a list or mapping (besides ``acl``) are not labels and are ignored.

    Returns
    -------
    DocMeta

    Raises
    ------
    ConfigError
        When ``d`` is not a mapping, a field has the wrong type or a group name is
        invalid.
    """
    if d is None:
        return DocMeta()
    if not isinstance(d, Mapping):
        raise ConfigError(f"metadata must be a mapping, not {type(d).__name__}")
    labels = []
    for key, value in d.items():
        key = str(key)
        if key in _RESERVED or value is None or isinstance(value, (list, tuple, dict, Mapping)):
            continue
        if isinstance(value, (str, int, float, bool)):
            labels.append((key, _scalar_str(value, key) or ""))
    return DocMeta(
        version=_scalar_str(d.get("version"), "version") or "",
        acl=_acl(d.get("acl")),
        title=_scalar_str(d.get("title"), "title") or None,
        labels=tuple(sorted(labels)),
    )


def load_meta_yaml(text: str) -> DocMeta:
    """Parse the text of a ``_meta.yaml`` file.

    Raises
    ------
    ConfigError
        When the text is not valid YAML, not a mapping, or has invalid fields.
    """
    try:
        data = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"invalid YAML{where}: {problem}") from None
    return meta_from_mapping(data)


def merge_meta(outer: DocMeta, inner: DocMeta) -> DocMeta:
    """Combine an enclosing meta with a nearer one: inner non-empty fields win.

    Labels are merged key by key (inner wins on conflicts).

    Examples
    --------
    >>> merge_meta(DocMeta(version="1", acl=("a",)), DocMeta(version="2")).acl
    ('a',)
    """
    labels = dict(outer.labels)
    labels.update(dict(inner.labels))
    return DocMeta(
        version=inner.version or outer.version,
        acl=inner.acl or outer.acl,
        title=inner.title or outer.title,
        labels=tuple(sorted(labels.items())),
    )


def apply_front_matter(meta: DocMeta, front: Mapping[str, Any]) -> DocMeta:
    """Return ``meta`` overridden by a document's front matter (front matter wins)."""
    return merge_meta(meta, meta_from_mapping(front))
