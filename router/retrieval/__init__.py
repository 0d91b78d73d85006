"""Scoring: which functions matter for a request, and why.

- ``texts``: the text embedded for a function (templates).
- ``sparse``: BM25-like sparse vectors of functions and requests.
- ``index``: a generation's function vectors (``FunctionStore``) and the one in use (``ActiveIndex``).
- ``scored``: what retrieval knows of a function for one request (``Candidate``, ``ScoredFunction``).
- ``candidates``: the functions near a request by meaning, by words or by past usage.
- ``fusion``: one ranking from those signals and from the recent context.
- ``examples``: usage examples (requests that led to a call), stored per model.
- ``learning``: pairing the calls of stored runs with the requests behind them.
"""
