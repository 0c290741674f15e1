"""An LLM client stand-in with scripted answers, for the answer-stage tests."""
from __future__ import annotations

from schemas.errors import LLMError


class ScriptedLLM:
    """An LLM client stand-in: structured calls fail (offline routing), answers are scripted;
    ``chat`` returns the reply whole, ``chat_stream`` yields it in small deltas."""

    def __init__(self, reply: str, fail: bool = False):
        self.reply, self.fail, self.calls, self.prompts = reply, fail, [], []

    def usage(self):
        return {}

    def structured(self, *a, **kw):
        raise LLMError("scripted: no structured replies")

    def chat(self, stage, messages, **kw):
        self.calls.append(stage)
        self.prompts.append(messages)
        if self.fail:
            raise LLMError("scripted failure")
        return self.reply

    def chat_stream(self, stage, messages, *, usage_out=None, **kw):
        self.calls.append(stage)
        self.prompts.append(messages)
        if self.fail:
            raise LLMError("scripted failure")
        if usage_out is not None:
            usage_out.calls += 1
        for i in range(0, len(self.reply), 7):
            yield self.reply[i:i + 7]
