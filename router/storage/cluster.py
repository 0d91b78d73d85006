"""How collections are laid out over a Qdrant cluster, and how writes and reads are acknowledged.

These options only mean something to a Qdrant server (and matter most to a cluster of
several nodes); ``qdrant-client``'s local mode accepts and ignores them.

- ``shard_number``: shards per collection, spread over the nodes (the server's default is
  one per node present when the collection is created). Fixed at creation.
- ``replication_factor``: copies of each shard on distinct nodes; 2 survives the loss of
  any one node. Applies to collections created afterwards.
- ``write_consistency_factor``: replicas that must apply a write before it succeeds
  (at most ``replication_factor``). Every write also waits until it is applied
  (``wait=true``), so an acknowledged write is visible to the next read of those replicas.
- ``write_ordering``: ``weak`` lets replicas apply concurrent writes to one point in
  different orders; ``medium`` serialises them through a dynamically elected leader;
  ``strong`` through the permanent leader (consistent, unavailable while it is down).
- ``read_consistency``: replicas each read asks (``1``, ``2``, ...) or ``majority``,
  ``quorum``, ``all``; a point is returned only when those replicas agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from qdrant_client import models

Ordering = Literal["weak", "medium", "strong"]
ReadConsistency = int | Literal["majority", "quorum", "all"]


@dataclass(frozen=True)
class ClusterOptions:
    """Sharding, replication and consistency of the collections a router keeps on a Qdrant server.

    ``None`` leaves a creation parameter to the server's configuration.
    """

    shard_number: int | None = None
    replication_factor: int | None = None
    write_consistency_factor: int | None = None
    write_ordering: Ordering = "weak"
    read_consistency: ReadConsistency = 1

    def __post_init__(self) -> None:
        for name in ("shard_number", "replication_factor", "write_consistency_factor"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        if isinstance(self.read_consistency, int) and self.read_consistency < 1:
            raise ValueError(f"read_consistency must be at least 1, not {self.read_consistency}")
        factor, replicas = self.write_consistency_factor, self.replication_factor or 1
        if factor is not None and factor > replicas:
            raise ValueError(
                f"write_consistency_factor {factor} exceeds the replication factor {replicas}: "
                "no write could ever be acknowledged by that many replicas"
            )

    def creation(self, *, sharded: bool = True) -> dict[str, Any]:
        """Keyword arguments of ``create_collection`` (only those set); one shard unless ``sharded``."""
        values = {
            "shard_number": self.shard_number if sharded else 1,
            "replication_factor": self.replication_factor,
            "write_consistency_factor": self.write_consistency_factor,
        }
        return {k: v for k, v in values.items() if v is not None}

    def writes(self) -> dict[str, Any]:
        """Keyword arguments of every point write: wait until applied, in the configured order."""
        ordering = None if self.write_ordering == "weak" else models.WriteOrdering(self.write_ordering)
        return {"wait": True, "ordering": ordering}

    def reads(self) -> dict[str, Any]:
        """Keyword arguments of every read (search, scroll, retrieve)."""
        value = self.read_consistency
        if value == 1:
            return {}
        return {"consistency": value if isinstance(value, int) else models.ReadConsistencyType(value)}
