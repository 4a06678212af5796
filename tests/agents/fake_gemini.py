"""A scripted fake of the Gemini API on 127.0.0.1, for the real Gemini CLI.

Gemini CLI streams `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` (bare
`data:` events). A conversation request (one that offers tools) is answered by the
script: first the scripted function call, then, once its functionResponse came back,
a short final text. Anything else (`generateContent`, `countTokens`) gets a plain
answer. Every request is kept in `log`, so a test reads what reached the model.
"""

from __future__ import annotations

import json
from typing import Any

from tests.agents.fake_http import FakeServer, Reply, Seen


class FakeGemini(FakeServer):
    def __init__(self, tool: str, args: dict[str, Any]) -> None:
        super().__init__()
        self.tool, self.args = tool, args

    def tool_results(self) -> list[str]:
        """Every functionResponse the model was sent, in order, as JSON text."""
        found: list[str] = []
        for seen in self.log:
            contents = seen.body.get("contents", []) if isinstance(seen.body, dict) else []
            for content in contents if isinstance(contents, list) else []:
                for part in content.get("parts") or [] if isinstance(content, dict) else []:
                    if isinstance(part, dict) and "functionResponse" in part:
                        found.append(json.dumps(part["functionResponse"], ensure_ascii=False))
        return found

    def answer(self, seen: Seen) -> Reply:
        if ":countTokens" in seen.path:
            return Reply(json={"totalTokens": 10})
        if seen.method != "POST" or ":" not in seen.path:
            return Reply(json={"models": []})
        parts = self._parts(seen.body if isinstance(seen.body, dict) else {})
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-fake",
        }
        if ":streamGenerateContent" in seen.path:
            return Reply(events=((None, chunk),))
        return Reply(json=chunk)

    def _parts(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        contents = body.get("contents") or []
        last = contents[-1].get("parts", []) if contents else []
        answered = any(isinstance(p, dict) and "functionResponse" in p for p in last)
        if answered or not body.get("tools"):
            return [{"text": "Done."}]
        return [{"functionCall": {"name": self.tool, "args": self.args}}]
