"""The Memory Wiki browsed as MCP resources (as server/app.py registers them: server/resources.py)."""

import pytest

from helpers import payload, resource_text

pytestmark = pytest.mark.anyio


async def test_wiki_pages_are_mcp_resources(server):
    from mcp import Client

    async with Client(server) as c:
        msgs = [{"content": "I adopted a puppy named Rex. Rex loves the beach.", "speaker": "Ana",
                 "ref": "a1"}, {"content": "Rex is cute! I went to the beach with Rex too.",
                                "speaker": "Bo", "ref": "b1"}]
        payload(await c.call_tool("remember", {"messages": msgs, "session_id": "s1",
                                               "session_time": "2023-05-08T10:00:00Z"}))
        assert server.runtime.curation.wait_idle(60)
        index = await c.read_resource("trimem://default/wiki")
        text = resource_text(index)
        assert "# index" in text and "wiki-entity-rex" in text
        page = await c.read_resource("trimem://default/wiki/wiki-entity-rex")
        body = resource_text(page)
        assert "I adopted a puppy named Rex." in body and "[a1]" in body
        missing = await c.read_resource("trimem://default/wiki/nope")
        assert "no wiki page" in resource_text(missing)
        with pytest.raises(Exception, match="no namespace"):   # the SDK's ResourceError
            await c.read_resource("trimem://elsewhere/wiki")
