"""Sessions: history, memories, what becomes a memory, and recall."""
