"""Answers with citations ``[n]`` referring to the evidence order (1 = best).

Offline: an extractive answer made of the evidence sentences sharing most words with the
question. With an LLM: a prompt in which every evidence text is wrapped as untrusted data.
"""
from __future__ import annotations

from typing import Sequence

from schemas.errors import LLMError
from vdgr_core.query.result import Evidence
from vdgr_core.query.textutil import overlap, terms
from vdgr_core.sentences import split_sentences

NO_ANSWER = "No answer was found in the indexed documentation you can access."
MAX_SENTENCES = 3
TOP_EVIDENCE = 5


def extractive_answer(question: str, evidence: Sequence[Evidence]) -> str:
    """The best sentences of the top evidence, each followed by its citation ``[n]``."""
    if not evidence:
        return NO_ANSWER
    qterms = terms(question)
    scored = []
    for n, ev in enumerate(evidence[:TOP_EVIDENCE], 1):
        for pos, sent in enumerate(split_sentences(ev.text)):
            if len(sent) < 3:
                continue
            scored.append((overlap(qterms, sent) + 0.05 / n, n, pos, sent))
    if not scored:
        return NO_ANSWER
    scored.sort(key=lambda x: (-x[0], x[1], x[2]))
    best = [s for s in scored[:MAX_SENTENCES] if s[0] > 0.05] or scored[:1]
    best.sort(key=lambda x: (x[1], x[2]))
    return " ".join(f"{sent.rstrip()} [{n}]" for _, n, _, sent in best)


def answer_messages(question: str, evidence: Sequence[Evidence]) -> list[dict]:
    """The chat messages of an LLM answer; evidence is numbered ``[n]`` and wrapped as data.

    An item with an empty text (dropped by context compression) is left out; the numbers of
    the others stay those of the evidence list.
    """
    from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

    # the path and source are corpus text as well: inside the delimiters with the passage
    blocks = "\n\n".join(
        f"[{n}]\n" + wrap_untrusted(f"{' > '.join(ev.path)} ({ev.source})\n{ev.text}", "EVIDENCE")
        for n, ev in enumerate(evidence, 1) if ev.text)
    system = ("Answer the question using only the numbered evidence. Cite every claim with the "
              "evidence number in square brackets, like [1]. If the evidence does not contain the "
              "answer, say so. " + UNTRUSTED_NOTICE)
    user = f"Question:\n{wrap_untrusted(question, 'QUESTION')}\n\nEvidence:\n{blocks}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def llm_answer(llm, question: str, evidence: Sequence[Evidence]) -> str:
    """Ask the LLM for an answer citing the evidence as ``[n]``; evidence is wrapped as data.

    Raises
    ------
    LLMError
        When the endpoint fails (the caller falls back to the extractive answer).
    """
    if not evidence:
        return NO_ANSWER
    text = llm.chat("answer", answer_messages(question, evidence))
    if not text.strip():
        raise LLMError("[answer] empty reply")
    return text.strip()
