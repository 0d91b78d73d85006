"""A model change for memories: every memory embedded again with the new model, then the old dropped.

Vectors of two models never mix, so each model has its own memories collection
(``router.sessions.records.memory_spec``). When the served model changes (a new generation),
every memory is embedded again with the new model, keeping its id, scope, namespace, session,
time, expiry and what replaced it; a second pass just before the switch catches memories stored
or deleted while the first one ran.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from router.embedding import Embedder
from router.sessions.memory import REEMBED_BATCH, MemoryStore
from router.sessions.records import StoredMemory, memory_spec
from router.storage.base import Storage


async def reembed_memories(storage: Storage, *, source: tuple[str, int], target: Embedder) -> int:
    """Make the target model's memories those of the source model; returns how many were embedded.

    Memories already in the target (same scope, namespace and text) are not embedded again, but
    take the source's state (replaced, expiry, when and in which session said), and target
    memories no longer in the source are deleted, so calling it twice costs the changes only.

    Args:
        storage: where both collections live.
        source: the previous model's name and dimension.
        target: the new model.
    """
    model, dimension = source
    if model == target.model_name or not await asyncio.to_thread(storage.exists, memory_spec(model, dimension).name):
        return 0
    old = await asyncio.to_thread(MemoryStore.open, storage, model=model, dimension=dimension)
    new = await asyncio.to_thread(MemoryStore.open, storage, model=target.model_name, dimension=target.dimension)
    wanted = await asyncio.to_thread(old.every)
    present = {m.id: m for _, m in await asyncio.to_thread(new.every)}
    gone = present.keys() - {m.id for _, m in wanted}
    if gone:
        await asyncio.to_thread(new.delete_ids, sorted(gone))
    # Replaced, expired or said again in the source while an earlier pass copied it.
    changed = {
        m.id: {"superseded_by": m.superseded_by, "expires_at": m.expires_at, "replaced_in": list(m.replaced_in)}
        | {"session_id": m.session_id, "created_at": m.created_at}
        for _, m in wanted
        if m.id in present and present[m.id] != m
    }
    await asyncio.to_thread(new.restate, changed)
    groups: dict[str, list[StoredMemory]] = defaultdict(list)
    for scope, memory in wanted:
        if memory.id not in present:
            groups[scope].append(memory)
    embedded = 0
    for scope, memories in groups.items():
        for start in range(0, len(memories), REEMBED_BATCH):
            part = memories[start : start + REEMBED_BATCH]
            vectors = await target.embed([m.text for m in part], kind="memory")
            await asyncio.to_thread(new.copy, scope, part, vectors)
            embedded += len(part)
    return embedded


def drop_memories(storage: Storage, *, model: str, dimension: int) -> None:
    """Remove a model's memories collection (after its memories moved to the new model)."""
    storage.drop(memory_spec(model, dimension).name)
