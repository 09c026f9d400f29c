from __future__ import annotations

from functools import cache
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from ._tools import caller_secret, tool_call, tool_list

INSTRUCTIONS = (
    "kbsite's knowledge base. Call `collections` first to see what you may search (languages, metadata fields "
    "for filters, and each collection's table of contents), then `search` with a question. Cite the "
    "`document` and `section` of the paragraphs you use; when `refused` is true or `results` is empty, say "
    "that the knowledge base does not answer rather than guessing."
)


async def _list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tool_list())


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return await tool_call(params.name, params.arguments)


@cache
def mcp_server() -> Server[Any]:
    """The one server core both transports serve (stateless: every call carries its caller)."""
    return Server(
        "kbsite",
        version="1",
        title="kbsite knowledge base",
        instructions=INSTRUCTIONS,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )


def serve_stdio(*, secret: str) -> None:
    """Serve MCP over stdin/stdout as the key with this secret until the client closes the pipe."""

    async def run() -> None:
        caller_secret.set(secret)
        server = mcp_server()
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
