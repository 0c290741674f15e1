"""Content safety shared by indexing and queries: credentials, personal data, prompt injection.

* :mod:`.secrets` finds credentials (detect-secrets plugins plus a few documented patterns) and
  masks them deterministically; indexing masks every document with it before anything is
  derived from the text, and the answer screen uses the same detector.
* :mod:`.personal` finds e-mail addresses and phone numbers (``phonenumbers``) for the answer
  screen.
* :mod:`.injection` flags text that reads like instructions to a model (prompt injection).
"""


def content_rules() -> str:
    """Identity of the credential-masking, injection-flag, PDF, Markdown and HTML text rules rows
    are made with.

    Recorded in the manifest's settings: when it changes (a new detect-secrets release, new
    rules, a PDF parser that cleans text otherwise: ``vdgr_core.parsing.pdf.PARSER_VERSION``, a
    Markdown parser that keeps other text: ``vdgr_core.parsing.markdown.PARSER_VERSION``, an HTML
    parser that shapes lists or tables otherwise: ``vdgr_core.parsing.html.PARSER_VERSION``, a
    text parser that finds other headings or entries: ``vdgr_core.parsing.text.PARSER_VERSION``, a
    reStructuredText parser that does: ``vdgr_core.parsing.rst.PARSER_VERSION``, a chunker that
    cuts or joins chunks otherwise: ``vdgr_core.chunking.CHUNKER_VERSION``), the
    next update rebuilds every domain, so no row keeps text made under older rules.
    """
    from vdgr_core.chunking import CHUNKER_VERSION
    from vdgr_core.parsing.html import PARSER_VERSION as HTML_VERSION
    from vdgr_core.parsing.markdown import PARSER_VERSION as MARKDOWN_VERSION
    from vdgr_core.parsing.pdf import PARSER_VERSION
    from vdgr_core.parsing.rst import PARSER_VERSION as RST_VERSION
    from vdgr_core.parsing.text import PARSER_VERSION as TEXT_VERSION
    from vdgr_core.safety.secrets import RULES_VERSION

    return f"{RULES_VERSION}/injection-1/{PARSER_VERSION}/{MARKDOWN_VERSION}/{HTML_VERSION}/{TEXT_VERSION}/{RST_VERSION}/{CHUNKER_VERSION}"
