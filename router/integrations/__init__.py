"""Integrations of the tool router with agent frameworks, each in its own module behind its extra.

Importing this package loads nothing.
"""

__all__: list[str] = []
