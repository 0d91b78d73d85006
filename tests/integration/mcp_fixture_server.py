"""A small real MCP server for the tests and the docs: a travel desk whose tool list can change.

Four tools; ``open_beta`` adds ``book_table`` to the list and, unless asked not to, sends
``notifications/tools/list_changed`` to the client. Every answer is deterministic text, so a
test can tell that a call went through.

    python tests/integration/mcp_fixture_server.py              # stdio
    python tests/integration/mcp_fixture_server.py --http 9000  # streamable HTTP at :9000/mcp
    python tests/integration/mcp_fixture_server.py --prefix web_  # tools named web_get_forecast, ...
    python tests/integration/mcp_fixture_server.py --label web    # forecasts end with "(from web)"
    python tests/integration/mcp_fixture_server.py --closable     # and close_desk, which removes every tool
    python tests/integration/mcp_fixture_server.py --empty        # no tools at all
    python tests/integration/mcp_fixture_server.py --stalling     # and stall, which blocks the server a while
    python tests/integration/mcp_fixture_server.py --traced       # and traced, whose result carries _meta
"""

from __future__ import annotations

import argparse
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent

server = MCPServer("travel-desk", instructions="Weather, money and phrases for travellers.")
prefix = ""
label = ""


@server.tool()
def get_forecast(city: str, days: int = 3) -> str:
    """Weather forecast for a city over the next days: temperature, rain and wind."""
    signed = f" (from {label})" if label else ""
    return f"Forecast for {city}: sunny, 24 C, light wind, for the next {days} days.{signed}"


@server.tool()
def convert_currency(amount: float, source: str, target: str) -> str:
    """Convert an amount of money from one currency to another at today's exchange rate."""
    return f"{amount:.2f} {source} is {amount * 1.1:.2f} {target} today."


@server.tool()
def translate_phrase(text: str, language: str) -> str:
    """Translate a short phrase into another language for a traveller."""
    return f"[{language}] {text}"


def book_table(restaurant: str, people: int, time: str) -> str:
    """Reserve a table at a restaurant for a number of people at a given time."""
    return f"Table for {people} at {restaurant} at {time}: confirmed."


@server.tool()
async def open_beta(ctx: Context, notify: bool = True) -> str:
    """Unlock the beta tools of this travel desk (restaurant reservations)."""
    if f"{prefix}book_table" not in {tool.name for tool in await server.list_tools()}:
        server.add_tool(book_table, name=f"{prefix}book_table")
    if notify:
        await ctx.session.send_tool_list_changed()
    return f"Beta tools unlocked: {prefix}book_table."


async def close_desk(ctx: Context) -> str:
    """Close this travel desk: every tool of it goes, this one too."""
    for tool in await server.list_tools():
        server.remove_tool(tool.name)
    await ctx.session.send_tool_list_changed()
    return "Desk closed."


async def stall(seconds: float) -> str:
    """Block the whole server for a number of seconds, as a server busy in its event loop does."""
    time.sleep(seconds)  # noqa: ASYNC251 - blocking is the point
    return f"Stalled {seconds} s."


def traced(trace: str) -> CallToolResult:
    """Answer with the trace id in the result's _meta, as servers pass data for the client beside the content."""
    return CallToolResult(content=[TextContent(text="traced")], _meta={"example/trace": trace})


def main() -> None:
    """Serve on stdio, or on streamable HTTP with ``--http PORT``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port")
    parser.add_argument("--prefix", default="", help="prefix every tool name (two servers side by side)")
    parser.add_argument("--label", default="", help="sign forecasts with this label (which server answered)")
    parser.add_argument("--closable", action="store_true", help="add close_desk, which removes every tool")
    parser.add_argument("--empty", action="store_true", help="list no tools")
    parser.add_argument("--stalling", action="store_true", help="add stall, which blocks the server a while")
    parser.add_argument("--traced", action="store_true", help="add traced, whose result carries _meta")
    args = parser.parse_args()
    if args.closable:
        server.add_tool(close_desk)
    if args.stalling:
        server.add_tool(stall)
    if args.traced:
        server.add_tool(traced)
    for function in (get_forecast, convert_currency, translate_phrase, open_beta) if args.empty else ():
        server.remove_tool(function.__name__)
    global prefix, label
    prefix, label = args.prefix, args.label
    if prefix:
        for function in (get_forecast, convert_currency, translate_phrase, open_beta):
            server.remove_tool(function.__name__)
            server.add_tool(function, name=f"{prefix}{function.__name__}")
    if args.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
