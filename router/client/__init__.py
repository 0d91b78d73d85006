"""Python client of the tool router's HTTP API (contract v1).

::

    from router.client import RouterClient

    with RouterClient("http://127.0.0.1:8000") as router:
        result = router.route("travel", "Find me a flight from Lisbon to Rome next Friday")
        for function in result.functions:
            print(function.name, function.score)

``AsyncRouterClient`` has the same methods, awaited. Importing this package loads
``httpx`` only, never the sidecar's model or storage.
"""

from router.client._async import AsyncRouterClient
from router.client._catalog_models import (
    Catalog,
    CatalogChanges,
    CatalogInfo,
    CatalogTools,
    FoundFunction,
    ToolSearchResult,
)
from router.client._errors import (
    APIError,
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    RouterClientError,
    TransportError,
    UnavailableError,
    ValidationError,
)
from router.client._example_models import ExamplesDeleted, UsageExample, UsageExamples
from router.client._miss_models import MissedCall, MissedFunction, Misses, OutcomeCounts
from router.client._models import (
    ExampleMatch,
    Explanation,
    Health,
    Memory,
    RoutedFunction,
    RouteResult,
    SignalWeights,
)
from router.client._retry import RetryPolicy
from router.client._session_models import MemoriesDeleted, SessionDeleted, StoredMemory, StoredMessages
from router.client._sync import RouterClient

__all__ = [
    "APIError",
    "AsyncRouterClient",
    "AuthenticationError",
    "Catalog",
    "CatalogChanges",
    "CatalogInfo",
    "CatalogTools",
    "ExampleMatch",
    "ExamplesDeleted",
    "Explanation",
    "FoundFunction",
    "Health",
    "MemoriesDeleted",
    "Memory",
    "MissedCall",
    "MissedFunction",
    "Misses",
    "NotFoundError",
    "OutcomeCounts",
    "PermissionDeniedError",
    "RetryPolicy",
    "RouteResult",
    "RoutedFunction",
    "RouterClient",
    "RouterClientError",
    "SessionDeleted",
    "SignalWeights",
    "StoredMemory",
    "StoredMessages",
    "ToolSearchResult",
    "TransportError",
    "UnavailableError",
    "UsageExample",
    "UsageExamples",
    "ValidationError",
]
