"""The DCD output check made early, on an answer stream, sentence by sentence.

An LLM answer streamed to a user must not show a sentence before it was checked. The
:class:`StreamChecker` buffers the deltas, and only when a sentence is complete (its end mark,
any citations ``[n]`` after it, and the start of the next sentence have arrived) runs the
answer screen (:func:`vdgr_core.query.guardrails.screen_answer`) on it against the evidence:
credentials and personal data the evidence does not hold are redacted, and a sentence whose
content is not supported by the evidence is withheld (replaced by :data:`WITHHELD`). Only
checked text is released, so nothing that fails leaves the server, even though the rest of the
answer is still being generated.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from vdgr_core.query.guardrails import screen_answer
from vdgr_core.safety.personal import DEFAULT_PHONE_REGIONS

WITHHELD = "[sentence withheld: not supported by the documents]"
# a sentence ends at . ! or ?, possibly followed by citations, then white space and the start of
# the next sentence (anything but another citation)
_BOUNDARY = re.compile(r"[.!?](?:\s*\[\d+\])*\s+(?=[^\s\[])")


@dataclass
class StreamCheckReport:
    """What the check changed: kinds redacted, sentences withheld, sentences released."""

    redactions: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    released: int = 0
    # sentences of text the answer stage wrote itself (extractive, corrective) that the
    # evidence does not support: reported, not withheld
    unsupported: list[str] = field(default_factory=list)

    def trace_data(self) -> dict:
        return {"redacted": sorted(set(self.redactions)), "withheld": list(self.withheld),
                "sentences": self.released}


class StreamChecker:
    """Checks a streamed answer before any of it is released.

    Parameters
    ----------
    evidence_texts : sequence of str
        What the reader was allowed to see (the context of the check).
    min_support : float
        Share of a sentence's content words that must occur in the evidence.
    phone_regions : sequence of str
        Regions whose national phone formats are recognised (``GuardrailConfig.phone_regions``).

    Examples
    --------
    >>> c = StreamChecker(["Hold RESET for 10 seconds."])
    >>> c.feed("Hold RESET for 10 seconds [1]. Then")
    'Hold RESET for 10 seconds [1]. '
    >>> c.finish()
    'Then'
    """

    def __init__(self, evidence_texts: Sequence[str], *, min_support: float = 0.5,
                 phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS):
        self._evidence = list(evidence_texts)
        self._min_support = min_support
        self._regions = tuple(phone_regions)
        self._buf = ""
        self.report = StreamCheckReport()

    def _screen(self, text: str):
        return screen_answer(text, self._evidence, min_support=self._min_support, phone_regions=self._regions)

    def own(self, text: str) -> str:
        """Screen text the answer stage wrote itself (an extractive or corrective answer): its
        sentences are quoted from the evidence or fixed phrases, so credentials and personal
        data are redacted but an unsupported sentence is only reported
        (``report.unsupported``), not withheld."""
        screened = self._screen(text)
        self.report.redactions += list(screened.redactions)
        self.report.unsupported += list(screened.unsupported)
        return screened.answer

    def _check(self, sentence: str) -> str:
        body = sentence.rstrip()
        tail = sentence[len(body):]
        if not body:
            return sentence
        screened = self._screen(body)
        self.report.redactions += list(screened.redactions)
        self.report.released += 1
        if screened.unsupported:
            self.report.withheld.append(body)
            return WITHHELD + tail
        return screened.answer + tail

    def feed(self, delta: str) -> str:
        """Add ``delta``; return the text now checked and safe to send ('' if none yet)."""
        self._buf += delta
        out, start = [], 0
        for m in _BOUNDARY.finditer(self._buf):
            out.append(self._check(self._buf[start:m.end()]))
            start = m.end()
        self._buf = self._buf[start:]
        return "".join(out)

    def finish(self) -> str:
        """Check and return what is left once the stream has ended."""
        rest, self._buf = self._buf, ""
        return self._check(rest) if rest.strip() else rest
