"""The catalog in the shapes of the model APIs' tool search with deferred loading.

OpenAI's Responses API (function tools with ``defer_loading``, a client-executed
``tool_search`` tool, ``tool_search_output`` items), Anthropic's Messages API (tools with
``defer_loading``, a custom search tool answered by ``tool_reference`` blocks in a
``tool_result``), MCP (tools as ``tools/list`` lists them) and a plain shape. Everything here
is pure: functions in, JSON objects out, the same bytes for the same catalog.
"""

from router.tools.lists import Format, ListFormat, catalog_tools, search_item
from router.tools.summary import SEARCH_TOOL, search_description

__all__ = [
    "SEARCH_TOOL",
    "Format",
    "ListFormat",
    "catalog_tools",
    "search_description",
    "search_item",
]
