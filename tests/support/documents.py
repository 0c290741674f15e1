"""PDF and DOCX test documents, generated in memory (fpdf2, python-docx): never downloaded."""
from __future__ import annotations

import io
from typing import Sequence

from fpdf import FPDF

BODY_PT = 11


def _pdf() -> FPDF:
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=20)
    pdf.set_font("helvetica", size=BODY_PT)
    pdf.add_page()
    return pdf


def _line(pdf: FPDF, text: str, size: float = BODY_PT, style: str = "") -> int:
    """Write one paragraph; returns the page it is on (it must fit on one page)."""
    pdf.set_font("helvetica", style, size)
    pdf.multi_cell(0, size * 0.6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    return pdf.page_no()


def pdf_with_outline() -> bytes:
    """Bookmarked PDF: "Orbit X2 Manual" > Installation (p1), Factory reset (p2) > LED codes (p2).

    The headings are drawn in body font, so only the outline can make them headings.
    """
    pdf = _pdf()
    pdf.start_section("Orbit X2 Manual", level=0)
    _line(pdf, "Orbit X2 Manual")
    _line(pdf, "This manual covers the Orbit X2 router.")
    pdf.start_section("Installation", level=1)
    _line(pdf, "Installation")
    _line(pdf, "Mount the Orbit X2 on a wall with the two screws supplied.")
    pdf.add_page()
    pdf.start_section("Factory reset", level=1)
    _line(pdf, "Factory reset")
    _line(pdf, "Hold RESET for 10 seconds until the LED blinks amber.")
    pdf.start_section("LED codes", level=2)
    _line(pdf, "LED codes")
    _line(pdf, "Amber means the reset is in progress.")
    return bytes(pdf.output())


def pdf_numbered_chapters() -> bytes:
    """A cover title (20 pt) then two top-level bookmarks "Scope" and "Terms" whose headings in
    the text are numbered ("1 Scope", "2 Terms")."""
    pdf = _pdf()
    _line(pdf, "Service Handbook", 20, "B")
    _line(pdf, "Edition 3")
    pdf.start_section("Scope", level=0)
    _line(pdf, "1 Scope", 14, "B")
    _line(pdf, "This handbook covers field service.")
    pdf.start_section("Terms", level=0)
    _line(pdf, "2 Terms", 14, "B")
    _line(pdf, "A unit is one installed router.")
    return bytes(pdf.output())


def pdf_by_fonts() -> bytes:
    """No outline: title 20 pt bold, chapters 16 pt bold, sections 13 pt, topics bold at body size
    with space above them."""
    pdf = _pdf()
    _line(pdf, "Galaxy Phone Guide", 20, "B")
    _line(pdf, "A guide to the Galaxy phone.")
    _line(pdf, "Getting started", 16, "B")
    _line(pdf, "Charge the battery before first use.")
    _line(pdf, "Inserting the SIM card", 13)
    _line(pdf, "Open the tray with the ejector pin.")
    pdf.ln(4)                                   # a bold heading at body size is set off by space
    _line(pdf, "Dual SIM", BODY_PT, "B")
    _line(pdf, "Both slots accept nano SIM cards.")
    _line(pdf, "Safety", 16, "B")
    _line(pdf, "Keep the phone away from water, fire and small children.")
    return bytes(pdf.output())


def pdf_multi_page(paragraphs: int = 60) -> tuple[bytes, dict[int, int]]:
    """One long section over several pages: paragraph "Fact N ..." -> its page number.

    Every page also carries a running header ("Orbit X2 service manual") and a footer with
    the page number, which the parser must drop.
    """
    class _Paged(FPDF):
        def header(self):
            self.set_font("helvetica", "", 8)
            self.cell(0, 5, "Orbit X2 service manual", new_x="LMARGIN", new_y="NEXT")
            self.ln(4)

        def footer(self):
            self.set_y(-15)
            self.set_font("helvetica", "", 8)
            self.cell(0, 5, f"Page {self.page_no()}", align="C")

    pdf = _Paged(format="A4")
    pdf.set_auto_page_break(True, margin=20)
    pdf.add_page()
    pdf.start_section("Maintenance", level=0)
    _line(pdf, "Maintenance", 16, "B")
    pages = {}
    for n in range(paragraphs):
        pages[n] = _line(pdf, f"Fact {n} about the fan tray number {n}: clean filter {n} monthly.")
    return bytes(pdf.output()), pages


def pdf_encrypted(user_password: str = "secret") -> bytes:
    """A PDF that needs ``user_password`` to open (no password: only owner restrictions)."""
    pdf = _pdf()
    _line(pdf, "Confidential pricing for the Orbit X2.")
    pdf.set_encryption(owner_password="owner-pw", user_password=user_password)
    return bytes(pdf.output())


def pdf_image_only() -> bytes:
    """Two pages holding only a picture: no text layer, as a scan."""
    from PIL import Image

    pdf = _pdf()
    img = Image.new("RGB", (40, 20), (200, 30, 30))
    pdf.image(img, x=20, y=20, w=80)
    pdf.add_page()
    pdf.image(img, x=20, y=20, w=80)
    return bytes(pdf.output())


def docx_document(paragraphs: Sequence[tuple[str, str]] = (), table: Sequence[Sequence[str]] = ()) -> bytes:
    """A DOCX of ``(style, text)`` paragraphs, then ``table`` (rows of cell texts) if given."""
    import docx

    document = docx.Document()
    for style, text in paragraphs:
        document.add_paragraph(text, style=style)
    if table:
        t = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                t.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_manual() -> bytes:
    """Title, Heading 1..3 and a spec table under Heading 2."""
    import docx

    document = docx.Document()
    document.add_heading("Orbit X2 Handbook", 0)
    document.add_paragraph("The handbook of the Orbit X2 router.")
    document.add_heading("Setup", 1)
    document.add_paragraph("Unpack the router and connect the power supply.")
    document.add_heading("Specifications", 2)
    document.add_paragraph("The radio specifications follow.")
    table = document.add_table(rows=3, cols=2)
    for r, (k, v) in enumerate([("Band", "Frequency"), ("2.4 GHz", "2400-2483 MHz"), ("5 GHz", "5150-5850 MHz")]):
        table.cell(r, 0).text, table.cell(r, 1).text = k, v
    document.add_paragraph("Antenna gain is 5 dBi.")
    document.add_heading("Antennas", 3)
    document.add_paragraph("Two external antennas are supplied.")
    document.add_heading("Troubleshooting", 1)
    document.add_paragraph("If the LED stays red, restart the router.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
