"""Table schemas and schema migrations.

Every namespace owns its own set of tables (``ns_<key>__<kind>``), so a query can never return
another namespace's rows: isolation is structural, not a filter someone could forget. Rows still
carry their ``namespace`` and readers check it (defence in depth).

``SCHEMA_VERSION`` is stored in the global ``_meta`` table. On open, ``MIGRATIONS`` run in order
from the stored version to the current one; each migration is idempotent, so a crash during one
is repaired by running it again.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

SCHEMA_VERSION = 1

TS = pa.timestamp("us", tz="UTC")

# The vectors of what strategies derive (memories, and every derived table with a ``vector``
# column: threads, pages, trajectories ...) are stored as float16: half the bytes of float32
# (a 384-d vector 768 bytes instead of 1,536; the memories table held 2.2 rows a stored turn,
# its vectors 3.4 KB a turn). Readers get float32 (``snapshot.matrix``, the rows' ``vector``),
# LanceDB searches a float16 column with a float32 query and builds its HNSW index over it. The
# messages' own vectors (``sources``, ``passages``) stay float32: they are the evidence every
# search ranks first. A table created before keeps its float32 column: writes follow the
# table's schema, so an old store works unchanged.
DERIVED_FLOAT = pa.float16()


def sources_schema(dim: int) -> pa.Schema:
    """Raw messages: immutable, embedded, full-text indexed. Everything recalled cites these."""
    return pa.schema([
        ("id", pa.string()),
        ("namespace", pa.string()),
        ("session_id", pa.string()),
        ("seq", pa.int64()),            # position of the message within its session
        ("ref", pa.string()),           # the caller's own id, echoed wherever the source is cited
        ("speaker", pa.string()),
        ("timestamp", TS),
        ("text", pa.string()),
        ("search_text", pa.string()),   # "speaker: text": what is embedded and full-text indexed
        ("metadata", pa.string()),      # JSON object, "" when absent
        ("embed_model", pa.string()),   # which model made `vector`: never mixed within a table
        ("created_at", TS),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


def passages_schema(dim: int) -> pa.Schema:
    """Passages of long messages (``storage/passages.py``): derived from ``sources`` (never
    exported), each embedded and full-text indexed, ``text[start:end]`` of its source."""
    return pa.schema([
        ("id", pa.string()),            # "<source id>#p<k>"
        ("namespace", pa.string()),
        ("source_id", pa.string()),
        ("session_id", pa.string()),
        ("speaker", pa.string()),
        ("timestamp", TS),              # the source's: time filters apply to passages as well
        ("start", pa.int64()),          # character offsets into the source's text
        ("end", pa.int64()),
        ("search_text", pa.string()),   # "speaker: passage": what is embedded and indexed
        ("embed_model", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


# ``session_id`` is the sessions table's (unenforced) primary key: LanceDB then detects two
# processes inserting one new session at once (the later commit is tried again and finds the
# row), which a bucket, without the local folder's cross-process lock, otherwise lets through as
# two rows. Tables created before keep their schema (and the race).
PRIMARY_KEY = {b"lance-schema:unenforced-primary-key:position": b"1"}
SESSIONS = pa.schema([
    pa.field("session_id", pa.string(), nullable=False, metadata=PRIMARY_KEY),
    ("namespace", pa.string()),
    ("session_time", TS),
    ("first_ts", TS),
    ("last_ts", TS),
    ("n_messages", pa.int64()),
    ("curation", pa.string()),          # none | queued | done
    ("created_at", TS),
    ("updated_at", TS),
])

# zstd over blocks of several records (miniblock): a record's ids, keys and reasons repeat in the
# next one. Level 6: 4.0 KB a recall record; 3 gave 4.1 KB, 9 gave 3.96 KB at 2.3x the time (a
# compaction rewrites the whole log).
ZSTD = {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "6",
        "lance-encoding:structural-encoding": "miniblock"}
TRACE_ENCODING = ZSTD


def compressible(field: pa.Field) -> bool:
    """Strings, bytes and lists of strings: what LanceDB stores uncompressed by default and zstd
    shrinks (JSON states, claim lines, ids repeated across rows; not vectors)."""
    t = field.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        t = t.value_type
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def compressed(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``ZSTD`` set on each compressible column (``compressible``): the on-disk
    encoding of the memories and the strategies' derived tables. On a LanceDB table the field
    metadata chooses the encoding each data file is written with (a compaction rewrites old
    files with it)."""
    return pa.schema([f.with_metadata({**(f.metadata or {}), **ZSTD}) if compressible(f) else f
                      for f in schema], metadata=schema.metadata)


def uncompressed_columns(schema: pa.Schema) -> list[str]:
    """The compressible columns of a stored table's ``schema`` without ``ZSTD`` (a table an
    earlier version created)."""
    out = []
    for f in schema:
        meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        if compressible(f) and any(meta.get(k) != v for k, v in ZSTD.items()):
            out.append(f.name)
    return out

RECALLS = pa.schema([
    ("recall_id", pa.string()),
    ("namespace", pa.string()),
    ("created_at", TS),
    ("query", pa.string()),
    ("strategy", pa.string()),
    ("source_ids", pa.list_(pa.string())),  # every source in the context: forget scrubs by these
    # JSON, the trace `explain` returns in its stored form (``traces.py``), zstd-compressed on
    # disk: LanceDB left strings of a few KB uncompressed by default (12 KB a record)
    pa.field("trace", pa.string(), metadata=TRACE_ENCODING),
])

AUDIT = pa.schema([
    ("id", pa.string()),
    ("namespace", pa.string()),
    ("at", TS),
    ("op", pa.string()),                    # remember | forget | consolidate | migrate | reembed
    ("target_ids", pa.list_(pa.string())),
    ("detail", pa.string()),                # JSON
])


def memories_schema(dim: int) -> pa.Schema:
    """Derived memories (episodes, facts, ...): text for display, ``source_ids`` for provenance.

    ``kind`` says which store the row belongs to; ``body`` holds the kind's own fields as JSON
    (an episode's title/summary/details, a fact's subject/relation/object/context), so strategies
    can add kinds without a schema migration. ``status`` is active | merged | superseded: nothing
    derived is ever destroyed by consolidation, only by ``forget`` of its sources.
    """
    return compressed(pa.schema([
        ("id", pa.string()),
        ("namespace", pa.string()),
        ("kind", pa.string()),
        ("origin", pa.string()),            # host | llm | heuristic | consolidation
        ("session_id", pa.string()),
        ("timestamp", TS),
        ("text", pa.string()),              # what gets embedded, searched and shown
        ("body", pa.string()),              # JSON
        ("source_ids", pa.list_(pa.string())),
        ("refs", pa.list_(pa.string())),
        ("status", pa.string()),
        ("lineage", pa.string()),           # JSON: derived_from / merged_into / superseded_by / history
        ("embed_model", pa.string()),
        ("created_at", TS),
        ("vector", pa.list_(DERIVED_FLOAT, dim)),   # half precision: see DERIVED_FLOAT
    ]))


# keyed like the sessions (PRIMARY_KEY): two processes opening a new bucket, or writing a new
# namespace's first message, at once store one row, not two
META = pa.schema([pa.field("key", pa.string(), nullable=False, metadata=PRIMARY_KEY),
                  ("value", pa.string())])
NAMESPACES = pa.schema([pa.field("name", pa.string(), nullable=False, metadata=PRIMARY_KEY),
                        ("key", pa.string()), ("created_at", TS)])

# version -> migration(store). Version 1 is the initial layout: tables are created on demand,
# so there is nothing to rewrite. A later version appends here, e.g. ``2: add_column_x``.
MIGRATIONS: dict[int, Callable[[object], None]] = {}
