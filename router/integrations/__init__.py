"""Integrations of the tool router with agent frameworks.

Each lives in its own module and needs its framework installed through an extra, so
importing this package loads nothing:

- ``router.integrations.agent_framework``: ``RouterContextProvider`` for Microsoft Agent
  Framework (``pip install 'tool-router[agent-framework]'``).
- ``router.integrations.langgraph``: ``retrieve_tools`` for ``langgraph_bigtool.create_agent``
  (``pip install 'tool-router[langgraph]'``).
"""

__all__: list[str] = []
