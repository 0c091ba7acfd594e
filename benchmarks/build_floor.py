"""What a set-per-entry word index spends to be built, next to what PreparedStore spends.

Run with ``make bench-build`` (or ``python benchmarks/build_floor.py [--size N]
[--profile NAME] [--engines numpy]``). On the benchmark's store (or a store
profile of ``benchmarks/profiles.py``, read with its own word reader) it times,
in one run:

- ``read, dropped``: the same reading with each entry's words dropped as
  read (reading alone, nothing kept);
- ``read words``: W(content) of every entry, read with the core's own bulk
  reader (C-level steps only: lower, encode, translate, split, set
  difference), or the profile's reader (``unicode_words`` for zh);
- ``fill one dict``: one dict lookup and one list append per (entry, word)
  pair, into a single dict, on the words already read;
- ``PreparedStore``: the real build on each engine installed (median of
  three), which also parses every timestamp, priority, tag list and cost:
  the stdlib one keeps one word list per (type, project) so that a query's
  bounds stay tight, numpy's its columns and postings.

``read words`` and ``fill one dict`` together are the floor of a pure-Python
index that reads each entry's words into a set and files them in a dict.
With the default words the numpy engine does neither: it files each text's
word runs as ids and lets numpy drop the short runs, stopwords and repeats,
so its build can take less than that floor.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchmarks.bench_retrieve import ENGINES, make_store  # noqa: E402
from benchmarks.profiles import PROFILES  # noqa: E402
from poolsplit_core.poolsplit import _content, _word_sets  # noqa: E402
from poolsplit_core.prepared import PreparedStore  # noqa: E402


def seconds(fn) -> float:
    """Wall time of ``fn()`` with the cyclic collector paused for every step alike."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--profile", choices=["benchmark", *PROFILES], default="benchmark")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    args = parser.parse_args()
    profile = PROFILES.get(args.profile)
    store = make_store(args.size) if profile is None else profile.make(args.size)
    hooks = {} if profile is None else profile.hooks
    reader = getattr(hooks.get("scorer"), "words", None)
    texts = [_content(entry) for entry in store]
    chars = sum(map(len, texts)) / len(texts)

    def reading() -> Any:
        return _word_sets(texts) if reader is None else map(reader, texts)

    # each entry's words read and dropped: reading alone, nothing kept
    alone_s = seconds(lambda: deque(reading(), maxlen=0))
    read: list = []
    read_s = seconds(lambda: read.extend(reading()))
    pairs = sum(map(len, read))

    def fill() -> None:
        index: defaultdict = defaultdict(list)
        for i, words in enumerate(read):
            for word in words:
                index[word].append(i)

    fill_s = seconds(fill)
    # (the tenants profile is built per tenant, as bench_profiles.py builds it)
    partition = {"partition_key": "user_id"} if args.profile == "tenants" else {}
    builds = {engine: [seconds(lambda engine=engine: PreparedStore(
        store, engine=engine, **partition, **hooks)) for _ in range(3)]
        for engine in args.engines}

    per_entry = 1e6 / args.size
    print(f"{args.profile}: {args.size} entries, {chars:.0f} characters and"
          f" {pairs / args.size:.1f} distinct words each ({pairs:,} (entry, word) pairs)")
    print(f"  read, dropped   {alone_s:6.2f} s  ({alone_s * per_entry:5.1f} us per entry)")
    print(f"  read words      {read_s:6.2f} s  ({read_s * per_entry:5.1f} us per entry)")
    print(f"  fill one dict   {fill_s:6.2f} s  ({fill_s * 1e9 / pairs:5.0f} ns per pair)")
    print(f"  floor (sum)     {read_s + fill_s:6.2f} s")
    for engine, times in builds.items():
        build_s = statistics.median(times)
        print(f"  PreparedStore, engine={engine!r:8} {build_s:6.2f} s"
              f"  ({build_s / (read_s + fill_s):.2f}x the floor; median of {len(times)}:"
              f" {', '.join(f'{b:.2f}' for b in times)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
