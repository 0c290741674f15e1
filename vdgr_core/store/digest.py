"""Order-independent, incremental digests of table rows (a multiset hash).

A table's digest is the sum, modulo 2**256, of a 256-bit hash of each row (AdHash). The sum
does not depend on row order or on how rows are split into batches, files or workers, so:

* workers digest the rows they stage and the driver only adds the partial sums up;
* an update subtracts the hashes of the rows it deletes and adds those of the rows it writes,
  without reading unchanged rows;
* per-domain digests (rows whose ``domain`` column is that domain) add up to the table's.

A row hash covers every column of the row in schema order, each value length-prefixed, so
equal rows hash equally on any machine and no two different rows collide by concatenation.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Iterable, Mapping, Optional

import numpy as np
import pyarrow as pa

MODULUS = 1 << 256
EMPTY = 0


def to_hex(value: int) -> str:
    return f"{value % MODULUS:064x}"


def from_hex(text: Optional[str]) -> int:
    return int(text, 16) if text else 0


def _prefixed(values: Iterable[bytes]) -> list[bytes]:
    return [len(b).to_bytes(4, "little") + b for b in values]


# A null value: a length prefix no real value has (values are far shorter than 4 GiB).
_NULL = b"\xff\xff\xff\xff"


def _column_bytes(col: pa.Array) -> list[bytes]:
    """One canonical byte string per value of ``col``.

    The encoding of a value depends on the column's type and the value only, never on its
    neighbours (whether the column holds nulls, how it is sliced or chunked), so a row hashes
    the same in a whole table and in any subset of it.
    """
    t = col.type
    n = len(col)
    if n == 0:
        return []
    out: list[bytes]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        out = _prefixed(s.encode("utf-8") for s in col.fill_null("").to_pylist())
    elif pa.types.is_fixed_size_list(t) and pa.types.is_primitive(t.value_type) and col.null_count == 0:
        flat = col.flatten().to_numpy(zero_copy_only=False)
        mat = np.ascontiguousarray(flat.reshape(n, t.list_size))
        out = _prefixed(row.tobytes() for row in mat)
    elif pa.types.is_fixed_size_list(t) and pa.types.is_primitive(t.value_type):
        dtype = t.value_type.to_pandas_dtype()
        out = _prefixed(np.asarray(v if v is not None else [], dtype=dtype).tobytes() for v in col.to_pylist())
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        arr = np.ascontiguousarray(col.fill_null(0).to_numpy(zero_copy_only=False))
        width = arr.dtype.itemsize
        raw = arr.tobytes()
        out = _prefixed(raw[i * width:(i + 1) * width] for i in range(n))
    elif pa.types.is_boolean(t):
        out = _prefixed(b"\x01" if v else b"\x00" for v in col.to_pylist())
    elif pa.types.is_list(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
        out = _prefixed(("\x1f".join(x or "" for x in v) + f"\x1e{len(v)}").encode("utf-8")
                        for v in (v or [] for v in col.to_pylist()))
    else:
        # anything else (nested structs): the Python value's repr, which is deterministic for
        # the str / int / float / bool / None / list / dict values Arrow returns
        return _prefixed(repr(v).encode("utf-8") for v in col.to_pylist())
    if col.null_count:
        valid = col.is_valid().to_numpy(zero_copy_only=False)
        out = [b if ok else _NULL for b, ok in zip(out, valid)]
    return out


def row_hashes(table: pa.Table | pa.RecordBatch) -> list[int]:
    """A 256-bit hash of each row of ``table`` (columns in the table's order)."""
    if table.num_rows == 0:
        return []
    columns = [_column_bytes(table.column(i).combine_chunks() if isinstance(table, pa.Table)
                             else table.column(i)) for i in range(table.num_columns)]
    out = []
    for parts in zip(*columns):
        out.append(int.from_bytes(hashlib.blake2b(b"".join(parts), digest_size=32).digest(), "big"))
    return out


def domain_digests(table: pa.Table | pa.RecordBatch) -> dict[str, int]:
    """Digest (as an int) of the rows of each domain of ``table`` (its ``domain`` column)."""
    out: dict[str, int] = defaultdict(int)
    domains = table.column("domain").to_pylist()
    for domain, h in zip(domains, row_hashes(table)):
        out[domain or ""] = (out[domain or ""] + h) % MODULUS
    return dict(out)


def add(a: Mapping[str, int], b: Mapping[str, int], sign: int = 1) -> dict[str, int]:
    """Per-key sum (``sign`` -1: difference) of two digest maps; zero entries are dropped."""
    out = dict(a)
    for key, value in b.items():
        out[key] = (out.get(key, 0) + sign * value) % MODULUS
    return {k: v for k, v in out.items() if v}


def total(digests: Mapping[str, int]) -> int:
    return sum(digests.values()) % MODULUS


def table_digest(name: str, table: pa.Table) -> str:
    """The digest of a whole table (what the manifest records for it, in one go)."""
    h = hashlib.sha256(name.encode("utf-8"))
    h.update(to_hex(total(domain_digests(table)) if table.num_rows else 0).encode("ascii"))
    return h.hexdigest()


__all__ = ["row_hashes", "domain_digests", "add", "total", "table_digest", "to_hex", "from_hex"]
