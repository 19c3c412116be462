"""A do-nothing MCP server on stdio built with the official MCP Python SDK: the second
peer of `cargo bench -p amc-cli --bench mcp`. Every `tools/call` gets the reply AMC gave
(read once from the file named on the command line); nothing else is done.
"""

import json
import sys

import anyio
import mcp.server.stdio
import mcp_types as types
from mcp.server.lowlevel import Server

REPLY = types.CallToolResult.model_validate(json.load(open(sys.argv[1])))


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="list_unread_messages", input_schema={"type": "object"})])


async def call_tool(ctx, params):
    return REPLY


async def main():
    server = Server("do-nothing", on_list_tools=list_tools, on_call_tool=call_tool)
    async with mcp.server.stdio.stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
