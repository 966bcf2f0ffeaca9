"""A store written by the earlier fp32 embedder keeps working with the int8 one: re-embedded into
the new model's tables, never mixed with its vectors."""

from __future__ import annotations

from trimem.providers.local import LocalEmbedder
from trimem.server.settings import Settings
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

OLD_NAME = "all-MiniLM-L6-v2"  # what trimem <= 0.1.0 recorded beside every vector


class EarlierEmbedder(LocalEmbedder):
    """Stands for the fp32 model of earlier releases: its name, and vectors that are not the
    int8 model's (a fixed rotation of them), so mixing the two would be visible."""

    name = OLD_NAME

    def embed(self, texts):
        return super().embed(texts)[:, ::-1].copy()


def _runtime(home, embedder=None) -> Runtime:
    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    if embedder is not None:
        rt._embedder = embedder
    return rt


def test_old_store_is_reembedded_with_the_new_model(tmp_path):
    home = tmp_path / "home"
    old = _runtime(home, EarlierEmbedder())
    msgs = [Message(content="The blue notebook is in the top drawer.", speaker="Ana", ref="t1"),
            Message(content="Dinner with Marta on Friday at eight.", speaker="Ana", ref="t2"),
            Message(content="The bike needs a new chain before spring.", speaker="Ana", ref="t3")]
    remember(old, msgs, session_id="s1", namespace="proj")
    old_tables = [n for n in old.store.table_names() if "__sources__" in n]
    assert old_tables and all(n.endswith("__all_minilm_l6_v2_384") for n in old_tables)
    old.close()

    new = _runtime(home)
    assert new.embedder.name == "all-MiniLM-L6-v2-int8"
    out = recall(new, "where is the notebook?", "plain", "proj", 2000)
    assert out.sources and out.sources[0].ref == "t1"
    names = [n for n in new.store.table_names() if "__sources__" in n]
    assert names and all(n.endswith("__all_minilm_l6_v2_int8_384") for n in names), names
    space = new.space("proj")
    rows = space.table("sources").search().limit(None).to_list()
    assert {r["embed_model"] for r in rows} == {"all-MiniLM-L6-v2-int8"}
    # every stored vector is now the int8 model's own vector of the row's text
    fresh = new.embed([r.get("search_text") or r["text"] for r in rows])
    for r, v in zip(rows, fresh):
        assert float(v @ r["vector"]) > 0.999
    new.close()
