"""A turn routed end to end: its functions, the session's history and the user's memories."""
