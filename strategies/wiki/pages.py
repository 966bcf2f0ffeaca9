"""The Memory Wiki: index, entity, topic and inventory pages, maintained as memory grows.

A page is (type eta, title y, content h, linked trajectories L_p). The paper's construction
formula was lost; our deterministic choice, from the trajectories and every claim (active
C^active and historical C^hist, with their source anchors A):

- **entity** pages: a key (lower-cased) that is a speaker, or is named in >= 2 claims, or is the
  noun head of >= 2 trajectories (the "repeated noun phrases"). L_p = every trajectory mentioning
  the key (speaker, name or head, any case). Content: current claims (newest first) then history
  (revised / deprecated, oldest first, with what replaced them); claims of linked trajectories
  whose speaker, subject, names or heads include the key.
- **topic** pages: one per facet (a thematic cluster: trajectories sharing it) and one per
  session (the events of that day: its trajectories and dated claims; titled by the session's
  earliest claim date).
- **inventory** pages: (subject, facet) with claims from >= 2 snapshots, for list-like facets
  (``text.INVENTORY_FACETS``): one line per item, with its date and ref, and a count.
- **index**: the directory of all pages. Non-index coverage is guaranteed: every trajectory has
  a session topic page, so none is reachable only through the index.
- A page linking more than ``HUB_SHARE`` of all trajectories (e.g. a speaker's page in a two-person
  chat) is a *hub*: readable and routable, but its links do not enter the candidate universe.
- Page vector: the L2-normalised sum of the vectors of the snapshots the page is about (an
  entity's: those spoken by it, naming it or with it as a noun head; a facet's: those with the
  facet; a session's: its snapshots; an inventory's: those with one of its claims); its time
  span is theirs. (A sum over the linked trajectories' centroids would move every page of a
  trajectory each time it grows; this way a new snapshot changes only the pages it is about.)
  Page ``text`` (title + content) is what BM25 routing searches.
With an LLM the content could be rewritten as prose; we keep the claim lists verbatim either way
(the paper warns that summaries shift salience), so page text is always grounded in claims.

Maintenance (``wikiupdate.py``): after each curation only the groups (``groups.py``) the new
snapshots are about, those of the new claims and of the older claims they revised are updated,
plus the index; ``rebuild`` recomputes everything (forget, consolidate, or when the pages
are found out of step with the trajectories). Both run the same group operations, so they agree.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ..frame import one_line
from . import text as tx
from .groups import Group
from .store import PAGE, PAGE_SCHEMA, Claim, Page, Snapshot

if TYPE_CHECKING:
    from ..space_api import StrategySpace

HUB_SHARE = 0.4
INDEX = ("index", "index")
__all__ = ["PAGE", "PAGE_SCHEMA", "HUB_SHARE", "page_id", "rebuild"]


def page_id(kind: str, key: str) -> str:
    return f"wiki-{kind}-{tx.slug(key)}"


def is_hub(n_links: int, n_all: int) -> bool:
    return n_links > HUB_SHARE * n_all and n_all >= 10


# -- which groups a trajectory and a claim belong to --------------------------------------------
def snap_keys(s: Snapshot) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """The groups snapshot row ``s`` is about, each with its (role, spelling) mentions; the
    trajectory holding ``s`` is linked to them all (a trajectory's keys are its snapshots')."""
    out: dict[tuple[str, str], list] = {}
    for role, xs in (("spk", s.speakers), ("name", s.names), ("head", s.heads)):
        for x in xs:
            if x:
                out.setdefault(("entity", x.lower()), []).append((role, x))
    for f in s.facets:
        out.setdefault(("topic", f), [])
    out.setdefault(("topic", f"session {s.session_id}"), [])
    for c in s.claims:
        for f in c.facets:
            if f in tx.INVENTORY_FACETS:
                out.setdefault(("inventory", f"{c.subject}|{f}"), [])
    out[INDEX] = []
    return out


def claim_keys(c: Claim) -> set[tuple[str, str]]:
    ks = {("entity", x.lower()) for x in [c.speaker, c.subject, *c.names, *c.heads] if x}
    ks |= {("topic", f) for f in c.facets}
    if c.dates or "events" in c.facets:
        ks.add(("topic", f"session {c.session_id}"))
    ks |= {("inventory", f"{c.subject}|{f}") for f in c.facets if f in tx.INVENTORY_FACETS}
    return ks


def accepts(g: Group, c: Claim) -> bool:
    """Whether claim ``c`` (one of whose keys is ``g``'s) is on ``g``'s page."""
    return g.kind != "entity" or c.trajectory_id in g.trajs


def mention(g: Group, roles: list[tuple[str, str]], tid: str) -> None:
    for role, spelling in roles:
        g.variants.add(spelling)
        if role == "spk":
            g.spk.add(spelling)
        elif role == "head" and len(g.head_trajs) < 2:
            g.head_trajs.add(tid)


def note_claim(groups: dict, c: Claim) -> None:
    """Counters that decide whether an entity has a page: claims naming it, session dates."""
    for n in {n.lower() for n in c.names}:
        if ("entity", n) in groups:
            groups[("entity", n)].name_claims += 1
    key = ("topic", f"session {c.session_id}")
    if c.timestamp and key in groups:
        g = groups[key]
        g.date = min(g.date, c.timestamp[:10]) if g.date else c.timestamp[:10]


def is_live(g: Group) -> bool:
    if not g.trajs:
        return False
    if g.kind == "entity":
        return bool(g.spk) or g.name_claims >= 2 or len(g.head_trajs) >= 2
    if g.kind == "inventory":
        return len(g.snaps) >= 2
    return True


def title(g: Group) -> str:
    """The page's name, on one line with no tag (``frame.one_line``): names are stored strings."""
    return one_line(_title(g))


def _title(g: Group) -> str:
    if g.kind == "entity":
        return min(g.spk or g.variants or {g.key})
    if g.kind == "inventory":
        return " · ".join(g.key.rsplit("|", 1))
    if g.key.startswith("session "):
        sid = g.key[len("session "):]
        return f"events of {g.date} ({sid})" if g.date else f"events of session {sid}"
    return f"topic: {g.key}"


def page_row(g: Group, n_all: int) -> Page:
    t = title(g)
    return Page(g.pid, type=g.kind, key=g.key, title=t, text=g.content(t),
                trajectory_ids=sorted(g.trajs), names=list(g.names), facets=sorted(g.facets),
                subject=g.key.rsplit("|", 1)[0] if g.kind == "inventory" else "",
                n_links=len(g.trajs), hub=is_hub(len(g.trajs), n_all),
                first_time=datetime.fromisoformat(g.first) if g.first else None,
                last_time=datetime.fromisoformat(g.last) if g.last else None,
                vector=g.vector())


def index_row(pages: list[Page], g: Group) -> Page:
    """The index page: every other page by type, most-linked first, over all trajectories."""
    lines = ["# index", f"{len(pages)} pages over {len(g.trajs)} trajectories."]
    for kind in ("entity", "inventory", "topic"):
        lines.append(f"## {kind} pages")
        lines += [f"- {r.title} ({r.n_links} trajectories) -> {r.id}"
                  for r in sorted((r for r in pages if r.type == kind),
                                  key=lambda r: (-r.n_links, r.key, r.id))]
    return Page("wiki-index", type="index", key="index", title="index", text="\n".join(lines),
                trajectory_ids=sorted(g.trajs), names=[], facets=[], subject="",
                first_time=None, last_time=None, n_links=len(g.trajs), hub=True,
                vector=g.vector())


def rebuild(space: StrategySpace) -> dict:
    from .wikiupdate import rebuild_all  # lazy: cycle with strategies.wiki.wikiupdate

    return rebuild_all(space)
