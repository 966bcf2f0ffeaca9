"""Namespaces are first-class: listed and described as resources, created only by remember; any
other tool (or resource) on an unknown namespace says so and writes nothing."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from mcp.shared.exceptions import MCPError

from helpers import error_text, payload, resource_text, turns

pytestmark = pytest.mark.anyio


def snapshot(home):
    return sorted((str(p.relative_to(home)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in home.rglob("*"))


async def test_unknown_namespace_is_an_error_and_writes_nothing(client, server, home):
    for ns in ("work", "personal"):
        payload(await client.call_tool("remember", {"messages": turns("hello there"),
                                                    "namespace": ns}))
    assert server.runtime.curation.wait_idle(60)
    server.runtime.store.space("work").upkeep.wait(30, flush=True)
    server.runtime.store.space("personal").upkeep.wait(30, flush=True)
    before = snapshot(home)
    calls = [("recall", {"query": "hello"}), ("explain", {"id": "src_x"}),
             ("consolidate", {}), ("consolidate", {"dry_run": True}), ("forget", {"ids": ["src_x"]})]
    for tool, args in calls:
        msg = error_text(await client.call_tool(tool, dict(args, namespace="wrok")))
        assert 'no namespace "wrok"' in msg and '"work"' in msg and '"personal"' in msg, (tool, msg)
    for uri in ("trimem://wrok/status", "trimem://wrok/wiki", "trimem://wrok/wiki/index"):
        with pytest.raises(MCPError, match="no namespace"):
            await client.read_resource(uri)
    assert snapshot(home) == before
    assert server.runtime.store.namespaces() == ["personal", "work"]


async def test_namespace_resources_list_and_describe(client, server):
    odd = 'a "quoted" name/with slash'
    payload(await client.call_tool("remember", {"messages": turns("one", "two", "three"),
                                                "session_id": "s1", "namespace": odd}))
    payload(await client.call_tool("remember", {"messages": turns("four", prefix="u"),
                                                "session_id": "s2", "namespace": "work"}))
    assert server.runtime.curation.wait_idle(60)
    uris = {str(r.uri) for r in (await client.list_resources()).resources}
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert "trimem://namespaces" in uris and "trimem://{namespace}/status" in templates
    listing = json.loads((await client.read_resource("trimem://namespaces")).contents[0].text)
    by_name = {n["namespace"]: n for n in listing["namespaces"]}
    assert by_name[odd] == {"namespace": odd, "sources": 3, "sessions": 1}
    assert by_name["work"]["sources"] == 1
    payload(await client.call_tool("consolidate", {"namespace": "work"}))
    status = json.loads((await client.read_resource(
        f"trimem://{quote('work', safe='')}/status")).contents[0].text)
    assert status["sources"] == 1 and status["sessions"] == 1
    assert status["curation"]["queued"] == 0 and status["curation"]["done"] == 1
    assert status["last_consolidation"]["at"] and status["bytes_on_disk"] > 0
    odd_status = json.loads((await client.read_resource(
        f"trimem://{quote(odd, safe='')}/status")).contents[0].text)
    assert odd_status["namespace"] == odd and odd_status["sources"] == 3


# odd but valid namespace names (what `remember` accepts: 1-512 characters, not blank, no ASCII
# control characters): each must be read back through its resources, and none for another
ODD_NAMES = [
    "default", "a b", "100%", "%2e%2e", "%252e", "a%20b", "a/b", "/abs", "..", ".", "...",
    "../x", "a/../..", "C:\\Windows", "c:x", "\\\\srv\\share", "q?x=1", "f#frag", "u@h:80",
    "{namespace}", "café", "cafe\u0301", "日本語", "\u00a0nbsp", "+plus+", "brain 🧠💾",
    "\u202eevil\u202c", "\u200fmark", "zwj\u200d", "\ufeffbom", "n" * 512,
]


async def test_every_valid_namespace_name_round_trips_through_its_resources(home):
    """Curation is off (it would take minutes for 31 namespaces): a namespace's wiki then has no
    index page yet, and the resource says so naming the namespace it read."""
    from mcp import Client

    from trimem.server.app import build_server
    from trimem.server.settings import Settings
    from trimem.strategies.frame import one_line

    assert len(ODD_NAMES) == 31 and len(set(ODD_NAMES)) == 31
    server = build_server(Settings(home=str(home), curation=False))
    async with Client(server) as client:
        for k, ns in enumerate(ODD_NAMES):   # namespace k holds k + 1 messages: counts tell apart
            payload(await client.call_tool("remember", {"namespace": ns, "messages": turns(
                *[f"note {j}" for j in range(k + 1)])}))
        wrong = []
        for k, ns in enumerate(ODD_NAMES):
            seg = quote(ns, safe="")   # RFC 6570 simple expansion: all but unreserved encoded
            try:
                status = json.loads(resource_text(await client.read_resource(f"trimem://{seg}/status")))
                if (status["namespace"], status["sources"]) != (ns, k + 1):
                    wrong.append((ns, "status", status["namespace"]))
                for tail in ("wiki", "wiki/index"):
                    text = resource_text(await client.read_resource(f"trimem://{seg}/{tail}"))
                    if f"in namespace {one_line(ns)!r}; read trimem://{seg}/wiki/index" not in text:
                        wrong.append((ns, tail, text[:80]))
            except MCPError as exc:
                wrong.append((ns, "error", str(exc)[:80]))
        assert not wrong, wrong
        # dot segments never reach another namespace
        for uri in ("trimem://a/../status", "trimem://x/wiki/../status", "trimem://x/wiki/%2e%2e",
                    "trimem://default/wiki/..%2F..%2Fstatus", "trimem://./../status"):
            with pytest.raises(MCPError):
                await client.read_resource(uri)
