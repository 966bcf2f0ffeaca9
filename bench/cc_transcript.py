"""Write a conversation as a Claude Code session transcript (JSON Lines), as the host would.

The shape of each line follows Claude Code's session files (docs/capture.md, "The host formats"):
``type``, ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``, ``isSidechain``, ``cwd`` and
``message`` (``role`` and ``content``: a string for a typed prompt, a list of blocks otherwise);
an assistant reply with a tool call is one entry per block, and the tool's result comes back as
a ``user`` entry holding a ``tool_result`` block. The capture benchmark and the capture tests
write their transcripts with this, appending as a live session does, so every hook reads a file
that grew since the last one.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Transcript:
    path: Path
    session_id: str
    cwd: str
    parent: str | None = None
    count: int = 0
    uuids: list[str] = field(default_factory=list)

    def _line(self, kind: str, message: dict, ts: str, uuid: str | None = None,
              **extra) -> str:
        uid = uuid or str(uuidlib.uuid4())
        obj = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
               "cwd": self.cwd, "sessionId": self.session_id, "version": "2.0.0",
               "gitBranch": "main", "type": kind, "message": message, "uuid": uid,
               "timestamp": ts, **extra}
        self.parent = uid
        self.uuids.append(uid)
        self.count += 1
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
        return uid

    def user(self, text: str, ts: str, uuid: str | None = None) -> str:
        return self._line("user", {"role": "user", "content": text}, ts, uuid)

    def assistant(self, text: str, ts: str, uuid: str | None = None,
                  thinking: str | None = None) -> str:
        if thinking:
            self._line("assistant", _reply([{"type": "thinking", "thinking": thinking,
                                             "signature": "sig"}]), ts)
        return self._line("assistant", _reply([{"type": "text", "text": text}]), ts, uuid)

    def tool(self, name: str, args: dict, result: str, ts: str) -> tuple[str, str]:
        """A tool call and its result: two entries, as the host writes them."""
        tid = "toolu_" + uuidlib.uuid4().hex[:20]
        call = self._line("assistant", _reply([{"type": "tool_use", "id": tid, "name": name,
                                                "input": args}]), ts)
        res = self._line("user", {"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": result}]}, ts,
            toolUseResult={"stdout": result[:200], "stderr": "", "interrupted": False})
        return call, res

    def sidechain(self, text: str, ts: str) -> str:
        uid = str(uuidlib.uuid4())
        obj = {"parentUuid": None, "isSidechain": True, "sessionId": self.session_id,
               "type": "user", "message": {"role": "user", "content": text}, "uuid": uid,
               "timestamp": ts, "cwd": self.cwd}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(obj) + "\n")
        return uid

    def hook_input(self, event: str, **extra) -> dict:
        """The JSON the host gives the hook on stdin for ``event`` in this session."""
        obj: dict[str, object] = {"session_id": self.session_id, "transcript_path": str(self.path),
               "cwd": self.cwd, "hook_event_name": event, "permission_mode": "default"}
        if event == "Stop":
            obj["stop_hook_active"] = False
        if event == "PreCompact":
            obj.update(trigger="auto", custom_instructions="")
        if event == "SessionEnd":
            obj["reason"] = "other"
        if event == "SessionStart":
            obj["source"] = "startup"
        return {**obj, **extra}


def _reply(content: list[dict]) -> dict:
    return {"id": "msg_" + uuidlib.uuid4().hex[:20], "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": content, "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 10}}
