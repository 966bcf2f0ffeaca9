"""A store written by the earlier fp32 embedder keeps working with the int8 one: re-embedded into
the new model's tables, never mixed with its vectors."""

from __future__ import annotations

from typing import Literal

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


def _vector_tables(rt) -> list[str]:
    return sorted(n for n in rt.store.table_names() if "__sources__" in n or "__passages__" in n)


def _only(rt, model: str) -> None:
    """Every vector table of the namespace is ``model``'s, every row in it was embedded by
    ``model``, and each stored vector is ``model``'s vector of the row's text."""
    from trimem.storage.space import model_tag

    tag = model_tag(model, 384)
    names = _vector_tables(rt)
    assert names and all(n.endswith(f"__{tag}") for n in names), names
    space = rt.space("proj")
    rows = space.table("sources").search().limit(None).to_list()
    assert {r["embed_model"] for r in rows} == {model}
    fresh = rt.embed([r.get("search_text") or r["text"] for r in rows])
    for r, v in zip(rows, fresh):
        assert float(v @ r["vector"]) > 0.999


def test_switching_to_e5_and_back_never_mixes(tmp_path):
    """local -> e5-small -> local on one home: each switch re-embeds into the running model's
    own tables (keyed by its name), rows written under one model are carried across, and no
    table ever holds two models' vectors."""
    import pytest

    from trimem.providers.e5_check import unavailable_reason

    if unavailable_reason() is not None:
        pytest.skip(f"e5 cannot run here: {unavailable_reason()}")
    home = tmp_path / "home"

    def runtime(kind: Literal["local", "e5-small"]) -> Runtime:
        return Runtime(Settings(home=str(home), curation=False, embedder=kind).to_config())

    first = runtime("local")
    remember(first, [Message(content="The blue notebook is in the top drawer.", speaker="Ana", ref="t1"),
                     Message(content="Dinner with Marta on Friday at eight.", speaker="Ana", ref="t2")],
             session_id="s1", namespace="proj")
    _only(first, "all-MiniLM-L6-v2-int8")
    first.close()

    e5 = runtime("e5-small")
    assert e5.embedder.name == "multilingual-e5-small-q4"
    assert recall(e5, "where is the notebook?", "plain", "proj", 2000).sources[0].ref == "t1"
    remember(e5, [Message(content="The bike needs a new chain before spring.", speaker="Ana", ref="t3")],
             session_id="s2", namespace="proj")
    _only(e5, "multilingual-e5-small-q4")
    assert recall(e5, "what does the bike need?", "plain", "proj", 2000).sources[0].ref == "t3"
    e5.close()

    back = runtime("local")
    assert recall(back, "what does the bike need?", "plain", "proj", 2000).sources[0].ref == "t3"
    _only(back, "all-MiniLM-L6-v2-int8")
    assert back.space("proj").sources.count() == 3
    back.close()


def test_the_fallback_leaves_the_minilm_tables_alone(tmp_path, monkeypatch):
    """e5 asked for on a CPU that cannot run it: MiniLM runs, so nothing is re-embedded."""
    import platform
    import sys

    import pytest

    if not (sys.platform == "linux" and platform.machine() == "x86_64"):
        pytest.skip("the CPU check reads /proc/cpuinfo on x86-64 Linux only")
    home = tmp_path / "home"
    first = Runtime(Settings(home=str(home), curation=False).to_config())
    remember(first, [Message(content="The blue notebook is in the top drawer.", speaker="Ana", ref="t1")],
             session_id="s1", namespace="proj")
    first.close()
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu sse2 avx\n")
    monkeypatch.setenv("TRIMEM_TEST_CPUINFO", str(tmp_path / "cpuinfo"))
    rt = Runtime(Settings(home=str(home), curation=False, embedder="e5-small").to_config())
    assert rt.embedder_choice.running == "local" and rt.embedder.name == "all-MiniLM-L6-v2-int8"
    assert recall(rt, "where is the notebook?", "plain", "proj", 2000).sources[0].ref == "t1"
    _only(rt, "all-MiniLM-L6-v2-int8")
    assert not rt.space("proj").derived.rows("audit", eq={"op": "reembed"}, columns=["at"])
    rt.close()
