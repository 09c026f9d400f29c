"""The MCP server: the platform's `search`, `verify_citations` and `collections` as tools any MCP client can call.

Built on the official `mcp` SDK's server core and served two ways:

- streamable HTTP at /mcp by the same deployment (`_http.py`: a Django view hands each POST to the SDK's
  streamable-HTTP manager in stateless JSON-response mode, so it runs under gunicorn's WSGI workers);
- stdio, `manage.py mcp`, the key in KB_MCP_KEY.

Public API: `mcp_server`, `serve_stdio`, `mcp_http`.
"""

from ._http import mcp_http
from ._server import mcp_server, serve_stdio

__all__ = ["mcp_http", "mcp_server", "serve_stdio"]
