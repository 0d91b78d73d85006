"""The router as an MCP server: ``find_tools`` and a per-session working set of found tools.

Nothing is imported here, so that ``router`` builds its parser without loading the MCP SDK.
"""
