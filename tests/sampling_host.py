"""A scripted host model for the sampling tests: a real ``mcp.Client``'s ``sampling_callback``."""

from __future__ import annotations

import json
import re

import anyio
from mcp.types import CreateMessageResult, ErrorData, TextContent


class Host:
    """A scripted host model; ``mode``: good | garbage | refuse | hang."""

    def __init__(self, mode: str = "good"):
        self.mode, self.requests = mode, []

    async def __call__(self, context, params):
        self.requests.append(params)
        if self.mode == "refuse":
            return ErrorData(code=-1, message="User rejected sampling request")
        if self.mode == "hang":
            await anyio.sleep(30)
        text = params.messages[0].content.text
        if self.mode == "garbage":
            answer = "Sure! Here are the memories: Ben has a dog."
        else:
            sessions = re.findall(r"^SESSION (S[0-9a-f]+) ", text, re.M)
            turns = {s: re.findall(rf'"turn": "({s}\.t\d+)"', text) for s in sessions}
            answer = json.dumps({"sessions": [{
                "session": s,
                "episodes": [{"title": "Ben adopts Biscuit", "summary": "Ben adopted a beagle.",
                              "details": "On Saturday, 6 May 2023 Ben adopted Biscuit, a beagle.",
                              "timestamp": "2023-05-06", "turn_refs": turns[s][:2]}],
                "tuples": [{"subject": "Ben", "relation": "adopted", "object": "a beagle named Biscuit",
                            "timestamp": "2023-05-06", "context": "Ben told Ana",
                            "turn_refs": turns[s][:1]},
                           {"subject": "Ana", "relation": "lives in", "object": "Lisbon",
                            "timestamp": "2023-05-08", "context": "", "turn_refs": ["S0.t9"]}]}
                for s in sessions],
                "merges": [{"merge": m, "text": "Merged by the host model."}
                           for m in re.findall(r"^MERGE (M[0-9a-f]+)$", text, re.M)]})
        return CreateMessageResult(role="assistant", model="scripted-model",
                                   content=TextContent(type="text", text=answer))
