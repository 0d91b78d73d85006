"""The router as an MCP server: ``find_tools`` and a per-session working set of found tools.

Modules: ``server`` (``ToolRouterServer``, the MCP handlers), ``backends`` (``Backend``:
``EmbeddedBackend`` in-process, ``RemoteBackend`` over HTTP; the working set),
``transports`` (stdio, streamable HTTP), ``config`` (upstream servers), ``cli`` (``router mcp``).
Nothing is imported here, so that ``router`` builds its parser without loading the MCP SDK.
"""
