"""``vdgr mcp``: the index served to agents over the Model Context Protocol (the ``mcp`` SDK).

:mod:`.tools` holds the two tools, ``search`` and ``fetch``, over the same knowledge base,
query stages and access control as ``POST /v1/query``; :mod:`.http` puts them behind the API
keys and JWTs of ``vdgr serve`` on streamable HTTP. Only ``runners/mcp_cli.py`` imports this
package (the ``mcp`` extra).
"""
