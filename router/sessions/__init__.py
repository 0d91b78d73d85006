"""Sessions: history, memories, what becomes a memory, and recall.

- ``history``: every session's messages, stamped with their source.
- ``extraction``: what of the user's input becomes a memory.
- ``memory``: memories per scope and namespace, deduplicated, found by similarity.
"""
