"""``router eval``: how well routing finds the functions each turn needs, on the user's own catalog.

Cases come from a JSONL file (``cases``) or from the sessions a router stored (``replay``);
``run`` routes them with the router as configured and ranks them with the peers (``peers``);
``metrics`` turns ranks into figures and ``report`` prints them.
"""
