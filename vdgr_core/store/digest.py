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
import pyarrow.compute as pc

MODULUS = 1 << 256
EMPTY = 0


def to_hex(value: int) -> str:
    return f"{value % MODULUS:064x}"


def from_hex(text: Optional[str]) -> int:
    return int(text, 16) if text else 0


def _prefixed(values: Iterable[bytes]) -> pa.Array:
    """Length-prefixed ``values`` as one binary array (the Python path)."""
    return pa.array([len(b).to_bytes(4, "little") + b for b in values], pa.binary())


# A null value: a length prefix no real value has (values are far shorter than 4 GiB).
_NULL = b"\xff\xff\xff\xff"
_EMPTY = pa.scalar(b"", pa.binary())


def _fixed_width(values: np.ndarray) -> pa.Array:
    """Each row of the 2-D ``values``, its bytes prefixed with their length, as binary."""
    n, width = len(values), values.shape[1] * values.dtype.itemsize
    rows = np.empty((n, 4 + width), dtype=np.uint8)
    rows[:, :4] = np.frombuffer(width.to_bytes(4, "little"), dtype=np.uint8)
    rows[:, 4:] = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(4 + width), n, [None, pa.py_buffer(rows)]).cast(pa.binary())


def _length_prefixed(values: pa.Array) -> pa.Array:
    """Binary ``values`` (no nulls), each prefixed with its length."""
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False).astype("<u4")
    prefixes = pa.FixedSizeBinaryArray.from_buffers(pa.binary(4), len(values), [None, pa.py_buffer(lengths)])
    return pc.binary_join_element_wise(prefixes.cast(pa.binary()), values, _EMPTY)


def _column_bytes(col: pa.Array) -> pa.Array:
    """One canonical byte string per value of ``col``, as a binary array.

    The encoding of a value depends on the column's type and the value only, never on its
    neighbours (whether the column holds nulls, how it is sliced or chunked), so a row hashes
    the same in a whole table and in any subset of it. The common types are encoded by Arrow's
    kernels; the bytes are those of the per-value definitions in the comments.
    """
    t = col.type
    n = len(col)
    if n == 0:
        return pa.array([], pa.binary())
    if pa.types.is_string(t):
        # the value's UTF-8 bytes (a null: "")
        out = _length_prefixed(col.fill_null("").cast(pa.binary()))
    elif pa.types.is_fixed_size_list(t) and pa.types.is_primitive(t.value_type) and col.null_count == 0 \
            and t.list_size > 0:
        # the values' bytes, in machine order
        flat = col.flatten().to_numpy(zero_copy_only=False)
        out = _fixed_width(flat.reshape(n, t.list_size))
    elif pa.types.is_fixed_size_list(t) and pa.types.is_primitive(t.value_type):
        dtype = pa.array([], t.value_type).to_numpy(zero_copy_only=False).dtype   # (no pandas needed)
        out = _prefixed(np.asarray(v if v is not None else [], dtype=dtype).tobytes() for v in col.to_pylist())
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        # the number's bytes (a null: 0)
        out = _fixed_width(np.ascontiguousarray(col.fill_null(0).to_numpy(zero_copy_only=False)).reshape(n, 1))
    elif pa.types.is_boolean(t):
        # one byte, 1 or 0 (a null: 0)
        out = _fixed_width(col.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8).reshape(n, 1))
    elif pa.types.is_list(t) and pa.types.is_string(t.value_type):
        # the strings (a null: "") joined by \x1f, then \x1e and the number of strings (a null list: [])
        filled = pa.ListArray.from_arrays(col.offsets, col.values.fill_null(""))
        count = pc.fill_null(pc.list_value_length(col), 0).cast(pa.string())
        joined = pc.binary_join_element_wise(pc.binary_join(filled, "\x1f"), count, "\x1e")
        out = _length_prefixed(joined.cast(pa.binary()))
    elif pa.types.is_large_string(t) or (pa.types.is_list(t) and pa.types.is_large_string(t.value_type)):
        return _column_bytes(col.cast(pa.list_(pa.string()) if pa.types.is_list(t) else pa.string()))
    else:
        # anything else (nested structs): the Python value's repr, which is deterministic for
        # the str / int / float / bool / None / list / dict values Arrow returns
        return _prefixed(repr(v).encode("utf-8") for v in col.to_pylist())
    if col.null_count:
        out = pc.if_else(col.is_valid(), out, pa.scalar(_NULL, pa.binary()))
    return out


def row_hashes(table: pa.Table | pa.RecordBatch) -> list[int]:
    """A 256-bit hash of each row of ``table`` (columns in the table's order)."""
    if table.num_rows == 0:
        return []
    columns = [_column_bytes(table.column(i).combine_chunks() if isinstance(table, pa.Table)
                             else table.column(i)) for i in range(table.num_columns)]
    rows = pc.binary_join_element_wise(*columns, _EMPTY) if len(columns) > 1 else columns[0]
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes
    return [from_bytes(blake2b(r, digest_size=32).digest(), "big") for r in rows.to_pylist()]


def domain_digests(table: pa.Table | pa.RecordBatch) -> dict[str, int]:
    """Digest (as an int) of the rows of each domain of ``table`` (its ``domain`` column)."""
    hashes: dict[str, list[int]] = defaultdict(list)
    for domain, h in zip(table.column("domain").to_pylist(), row_hashes(table)):
        hashes[domain or ""].append(h)
    return {domain: sum(hs) % MODULUS for domain, hs in hashes.items()}


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
