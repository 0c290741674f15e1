"""Extract checkable facts (label -> value, table cells) from DCD documents.

DCD documents are Markdown-like text: a bold title line, ``### N. Heading`` sections,
``- **Label:** value`` bullets, inline ``**Label:** value.`` sentences and pipe tables.
A fact is what a question can ask for and a retrieved chunk can be checked against.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^#{1,6}\s+(?:\d+\.\s*)?(.*?)\s*$")
_LABEL = re.compile(r"\*\*([^*:]{2,60}):\*\*\s*([^*\n]+)")
_ROW = re.compile(r"^\s*\|(.+)\|\s*$")
_SEP = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_EMPTY = re.compile(r"^[—–\-\s]*(RUB)?\s*$")


@dataclass(frozen=True)
class Fact:
    """One value stated in a document."""

    kind: str        # "label" or "table"
    heading: str     # section heading the fact sits under
    label: str       # "Mortgage rate" / table row label ("Studio")
    column: str      # table column header ("" for label facts)
    value: str       # "5.9% per annum via partner bank(s) Sberbank"


def _value(text: str) -> str:
    v = re.split(r"(?<=[^\d\s])\.\s|\.\s+(?=[A-Z])|\.$", text.strip(), maxsplit=1)[0]
    return " ".join(v.strip().rstrip(".").split())


def extract_facts(text: str) -> list[Fact]:
    """Facts of one document in document order (empty values such as "—" skipped).

    Examples
    --------
    >>> extract_facts("### 2. Fees\\n\\n- **Security deposit:** 2 months rent\\n")
    [Fact(kind='label', heading='Fees', label='Security deposit', column='', value='2 months rent')]
    """
    facts: list[Fact] = []
    heading = ""
    header: list[str] | None = None
    for line in text.split("\n"):
        m = _HEADING.match(line)
        if m:
            heading, header = m.group(1), None
            continue
        if _SEP.match(line) and "|" in line:
            continue
        m = _ROW.match(line)
        if m:
            cells = [c.strip() for c in m.group(1).split("|")]
            if header is None:
                header = cells
                continue
            for col, val in zip(header[1:], cells[1:]):
                if not _EMPTY.match(val) and col.lower() != "bedrooms":
                    facts.append(Fact("table", heading, cells[0], col, val))
            continue
        header = None
        for m in _LABEL.finditer(line):
            val = _value(m.group(2))
            if val and not _EMPTY.match(val):
                facts.append(Fact("label", heading, m.group(1).strip(), "", val))
    return facts


_TABLE_Q = {
    "price from": "What is the starting price of a {row} apartment?",
    "net internal area (sqm)": "What is the net internal area of a {row} apartment in sqm?",
    "price": "How much does {row_l} cost?",
}
_LABEL_Q = {
    "phone": "What is the phone number of the management office?",
    "sports": "Which sports facilities does the complex have?",
    "children's zones": "What children's play zones are there?",
    "territory": "What is the area of the territory?",
    "cctv cameras": "How many CCTV cameras are installed?",
    "staff": "How many staff members does the management company have?",
    "acs type": "What type of access control system is used?",
    "system type": "What type of access control system is used?",
    "security": "What security arrangements are in place?",
    "security arrangement": "What security arrangements are in place?",
    "guest parking": "How many guest parking spaces are there?",
    "parking for commercial tenants": "How many parking spaces are available for commercial tenants?",
    "number of lots": "How many commercial lots are there?",
    "utilities": "Are utilities included in the rent?",
    "renovation work permitted": "When is renovation work permitted?",
    "registration required": "When is visitor registration required?",
    "visitor parking available": "Is visitor parking available?",
    "maximum stay without registration": "How long can a visitor stay without registration?",
    "footage archive": "How long is CCTV footage archived?",
    "guest code duration": "How long is a guest access code valid?",
    "patrol frequency": "How often does security patrol the territory?",
    "response time": "What is the response time for service requests?",
}


def question_for(fact: Fact) -> str:
    """A plain English question whose answer is ``fact.value``.

    Examples
    --------
    >>> question_for(Fact("label", "Quiet", "Quiet hours", "", "23:00-07:00"))
    'What are the quiet hours?'
    >>> question_for(Fact("table", "Prices", "Studio", "Price from", "4.1M RUB"))
    'What is the starting price of a Studio apartment?'
    """
    if fact.kind == "table":
        tpl = _TABLE_Q.get(fact.column.lower(), "What is the {col} for {row}?")
        return tpl.format(row=fact.label, row_l=fact.label.lower(), col=fact.column.lower())
    label = fact.label.lower()
    if label in _LABEL_Q:
        return _LABEL_Q[label]
    last = label.split()[-1]
    plural = last.endswith("s") and not last.endswith("ss") and not label.startswith("number of")
    return f"What {'are' if plural else 'is'} the {label}?"
