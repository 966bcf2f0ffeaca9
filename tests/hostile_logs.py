"""Log lines a hostile or broken agent CLI log may hold, for the readers of other agent CLIs'
logs (tests/capture/test_agentlog_*.py): text that is not JSON, JSON nested past the parser's
depth, wrong types in every field a reader looks at, and deep but valid arguments."""

from __future__ import annotations

import json

HOSTILE = ["not json", "[" * 100_000, json.dumps([1, 2]), json.dumps({"type": 5}),
           json.dumps({"type": ["unhashable"]}), json.dumps({"$set": {"messages": [{"id": "x", "type": ["u"]}]}}), "{\"a\": " * 5000,
           json.dumps({"type": "response_item", "payload": {"type": "message", "role": "user",
                                                            "content": 12}}),
           json.dumps({"type": "response_item", "payload": {"type": "function_call", "name": ["x"],
                                                            "arguments": "{" * 3000, "call_id": 7}}),
           json.dumps({"type": "response_item", "payload": {"type": "function_call_output",
                                                            "call_id": "c", "output": {"x": 1}}}),
           json.dumps({"id": 5, "type": "user"}), json.dumps({"$set": {"messages": "no"}}),
           json.dumps({"id": "m", "type": "gemini", "content": [{"functionCall": "x"}],
                       "toolCalls": [None, {"id": 3}]}),
           json.dumps({"sessionId": "s", "messages": [1, {"id": {}, "type": "user"}]}),
           json.dumps({"type": "response_item", "payload": {     # deep, but valid JSON
               "type": "function_call", "name": "deep", "call_id": "deep",
               "arguments": '{"a":' * 5000 + "1" + "}" * 5000}}),
           json.dumps({"type": "response_item", "payload": {    # a deep name, no call id
               "type": "web_search_call", "action": json.loads("[" * 900 + "]" * 900)}}),
           json.dumps({"type": "response_item", "payload": {
               "type": "function_call", "name": json.loads("[" * 900 + "]" * 900),
               "arguments": "{}", "call_id": "deep-name"}}),
           json.dumps({"id": "deep", "type": "gemini", "toolCalls": [
               {"id": "deep", "name": "deep", "args": json.loads('{"a":' * 900 + "1" + "}" * 900)}]})]
