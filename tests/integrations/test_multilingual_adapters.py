"""Both adapters with the opt-in Unicode reader: Chinese relevance, the prepared walk kept.

A factory scorer (``make_scorer(words=unicode_words)``) and the CJK counter
pass through ``scorer=`` and ``token_counter=``; the adapters' prepared store
indexes with the scorer's reader, so queries walk the index (never the
stateless fallback); serialising such a component is refused by name.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import TextNode

import poolsplit_core.poolsplit as core
from poolsplit_core.poolsplit import Pool, cjk_token_counter, make_scorer, unicode_words
from poolsplit_integrations._entries import NotSerializableError
from poolsplit_integrations.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_integrations.llama_index import PoolSplitRetriever as LlamaRetriever

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
UNICODE = make_scorer(words=unicode_words)
POOLS = [Pool("notes", max_tokens=60, max_entries=1, types=("note", "correction"))]
TEXTS = {
    "shop": "周末去超市买水果和牛奶",
    "call": "给妈妈打电话问候生日",
    "db": "数据库迁移前先备份生产数据",
    "fix": "永远不要在周五下午直接改生产数据库",
}
MESSAGE = "今晚做数据库迁移"


def meta(key):
    return {"id": key, "type": "correction" if key == "fix" else "note",
            "scope": "always" if key == "fix" else "contextual", "created": "2026-10-01"}


def lc_docs():
    return [Document(page_content=text, metadata=meta(key)) for key, text in TEXTS.items()]


def li_nodes():
    return [TextNode(id_=key, text=text, metadata=meta(key)) for key, text in TEXTS.items()]


@pytest.fixture
def no_fallback(monkeypatch):
    """Fail if a query leaves the prepared walk for the stateless path."""
    def fallback(*args, **kwargs):
        raise AssertionError("the prepared store fell back to the stateless path")
    monkeypatch.setattr(core, "explain_pools", fallback)


def lc_ids(retriever):
    return [d.metadata["id"] for d in retriever.invoke(MESSAGE)]


def li_ids(retriever):
    return [n.node.node_id for n in retriever.retrieve(MESSAGE)]


def test_langchain_default_reader_misses_the_chinese_match_and_unicode_finds_it(no_fallback):
    plain = LangChainRetriever(documents=lc_docs(), pools=POOLS, now=NOW)
    chinese = LangChainRetriever(documents=lc_docs(), pools=POOLS, now=NOW, scorer=UNICODE,
                                 token_counter=cjk_token_counter)
    assert lc_ids(plain) == ["fix", "call"]  # no word shared: the tie falls to the smallest id
    assert lc_ids(chinese) == ["fix", "db"]


def test_llamaindex_default_reader_misses_the_chinese_match_and_unicode_finds_it(no_fallback):
    plain = LlamaRetriever(nodes=li_nodes(), pools=POOLS, now=NOW)
    chinese = LlamaRetriever(nodes=li_nodes(), pools=POOLS, now=NOW, scorer=UNICODE,
                             token_counter=cjk_token_counter)
    assert li_ids(plain) == ["fix", "call"]
    assert li_ids(chinese) == ["fix", "db"]


def test_the_cjk_counter_reaches_the_budget_through_both_adapters():
    # 13 CJK characters: 13 tokens with the CJK counter, 3 with the default.
    tight = [Pool("notes", max_tokens=10, max_entries=3, types=("note", "correction"))]
    lc = LangChainRetriever(documents=lc_docs(), pools=tight, now=NOW, scorer=UNICODE,
                            token_counter=cjk_token_counter)
    li = LlamaRetriever(nodes=li_nodes(), pools=tight, now=NOW, scorer=UNICODE,
                        token_counter=cjk_token_counter)
    assert lc_ids(lc) == li_ids(li) == ["fix", "call"]  # only the 10-character note fits


def test_serialising_a_configured_scorer_is_refused_naming_it():
    lc = LangChainRetriever(documents=lc_docs(), pools=POOLS, scorer=UNICODE)
    with pytest.raises(NotSerializableError,
                       match=r"scorer is ConfiguredScorer\(words='unicode'\).*"
                             r"make_scorer\(\*\*\{'words': 'unicode'\}\)"):
        lc.model_dump_json()
    li = LlamaRetriever(nodes=li_nodes(), pools=POOLS, scorer=UNICODE)
    with pytest.raises(NotSerializableError, match=r"scorer is ConfiguredScorer"):
        li.to_dict()
    data = li.to_dict(exclude={"scorer"})
    again = LlamaRetriever.from_dict(data, scorer=make_scorer(words="unicode"), now=NOW)
    assert li_ids(again) == ["fix", "db"]
