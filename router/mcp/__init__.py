"""The router as an MCP server: ``find_tools`` and a per-session working set of found tools.

Modules: ``server`` (``ToolRouterServer``, the MCP handlers), ``session`` (the working set),
``backends`` (``Backend``: ``EmbeddedBackend`` in-process, ``RemoteBackend`` over HTTP),
``transports`` (stdio, streamable HTTP), ``config`` (upstream servers), ``cli`` (``router mcp``).
Nothing is imported here, so that ``router`` builds its parser without loading the MCP SDK.
"""
