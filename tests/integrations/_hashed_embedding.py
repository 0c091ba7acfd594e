"""A deterministic, offline embedding: hashed bag of words, unit length.

Texts that share words get close vectors, so a similarity search behaves like
a real one (a crowded topic crowds the results) without a model or a network.
"""

from __future__ import annotations

import hashlib
import math
import re

from llama_index.core.base.embeddings.base import BaseEmbedding


def hashed_vector(text: str, size: int) -> list[float]:
    vector = [0.0] * size
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "big") % size] += 1.0 if digest[4] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class HashedEmbedding(BaseEmbedding):
    """LlamaIndex's BaseEmbedding over :func:`hashed_vector`."""

    size: int = 64

    def _get_query_embedding(self, query: str) -> list[float]:
        return hashed_vector(query, self.size)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return hashed_vector(query, self.size)

    def _get_text_embedding(self, text: str) -> list[float]:
        return hashed_vector(text, self.size)
