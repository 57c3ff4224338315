"""Kafka's default partition of a keyed record, for a whole poll of keys at once.

A record with a key goes to partition ``(murmur2(key) & 0x7fffffff) % n``
(``n`` partitions, sorted): the rule of the Java client and of kafka-python's
``DefaultPartitioner``, so outputs keyed like their events land where any
other producer would put them. kafka-python computes murmur2 in pure Python
for every record it sends; here the keys of a poll are hashed together in
numpy (grouped by length, 32-bit arithmetic that wraps as Java's ``int``
does), and each record is sent with its partition given.

>>> from kafka.partitioner.default import murmur2
>>> keys = [b"", b"a", b"event-17", "é".encode()]
>>> murmur2_many(keys).tolist() == [murmur2(k) for k in keys]
True
>>> partitions_of([b"event-17", None], [0, 1, 2]) == [(murmur2(b"event-17") & 0x7FFFFFFF) % 3, None]
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["murmur2_many", "partitions_of"]

_SEED, _M = 0x9747B28C, np.uint32(0x5BD1E995)


def murmur2_many(keys: list[bytes]) -> np.ndarray:
    """Kafka's murmur2 of each key (``uint32``), as ``kafka.partitioner.default.murmur2`` computes it."""
    out = np.zeros(len(keys), dtype=np.uint32)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    for length in np.unique(lengths).tolist():
        at = np.flatnonzero(lengths == length)
        data = np.frombuffer(b"".join([keys[i] for i in at.tolist()]), dtype=np.uint8).reshape(len(at), length)
        h = np.full(len(at), _SEED ^ length, dtype=np.uint32)
        whole = length // 4
        if whole:
            blocks = data[:, : whole * 4].copy().view("<u4")  # little-endian 32-bit words, as the Java client reads
            for j in range(whole):
                k = blocks[:, j] * _M
                k ^= k >> np.uint32(24)
                k *= _M
                h *= _M
                h ^= k
        tail = data[:, whole * 4 :].astype(np.uint32)
        extra = length % 4
        if extra >= 3:
            h ^= tail[:, 2] << np.uint32(16)
        if extra >= 2:
            h ^= tail[:, 1] << np.uint32(8)
        if extra >= 1:
            h ^= tail[:, 0]
            h *= _M
        h ^= h >> np.uint32(13)
        h *= _M
        h ^= h >> np.uint32(15)
        out[at] = h
    return out


def partitions_of(keys: list, partitions) -> list:
    """The default partitioner's partition (one of ``partitions``) of each key; None for a key of None (the
    producer picks one)."""
    ordered = sorted(partitions)
    keyed = [i for i, key in enumerate(keys) if key is not None]
    out: list = [None] * len(keys)
    if keyed:
        hashes = murmur2_many([keys[i] for i in keyed]) & np.uint32(0x7FFFFFFF)
        for i, index in zip(keyed, (hashes % np.uint32(len(ordered))).tolist()):
            out[i] = ordered[index]
    return out
