"""Both adapters with the opt-in Unicode reader: Chinese relevance, the prepared walk kept.

A factory scorer (``make_scorer(words=unicode_words)``) and the CJK counter
pass through ``scorer=`` and ``token_counter=``; the adapters' prepared store
indexes with the scorer's reader, so queries walk the index (never the
stateless fallback). A configured scorer serialises as its options
(``{"words": "unicode"}``) and reads back; one with a custom reader is
refused by name, like any custom callable.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import TextNode

import poolsplit_core.poolsplit as core
from poolsplit_core.multilingual import cjk_token_counter, unicode_words
from poolsplit_core.poolsplit import Pool, make_scorer
from poolsplit_integrations._serialise import NotSerializableError
from poolsplit_integrations.langchain import PoolSplitCompressor
from poolsplit_integrations.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_integrations.llama_index import PoolSplitMemoryBlock, PoolSplitPostprocessor
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
    # Document.id is the entry id (the tie-break); the metadata id is plain metadata.
    return [Document(id=key, page_content=text, metadata=meta(key))
            for key, text in TEXTS.items()]


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
    plain = LangChainRetriever(documents=lc_docs(), pools=POOLS, now=NOW, require_filter_keys=())
    chinese = LangChainRetriever(documents=lc_docs(), pools=POOLS, now=NOW, scorer=UNICODE,
                                 token_counter=cjk_token_counter, require_filter_keys=())
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
                            token_counter=cjk_token_counter, require_filter_keys=())
    li = LlamaRetriever(nodes=li_nodes(), pools=tight, now=NOW, scorer=UNICODE,
                        token_counter=cjk_token_counter)
    assert lc_ids(lc) == li_ids(li) == ["fix", "call"]  # only the 10-character note fits


def test_langchain_components_dump_a_configured_scorer_as_its_options_and_read_it_back():
    retriever = LangChainRetriever(documents=lc_docs(), pools=POOLS, now=NOW, scorer=UNICODE,
                                   require_filter_keys=())
    assert retriever.model_dump(mode="json")["scorer"] == {"words": "unicode"}
    rebuilt = LangChainRetriever.model_validate_json(retriever.model_dump_json())
    assert rebuilt.scorer == UNICODE and lc_ids(rebuilt) == ["fix", "db"]
    compressor = PoolSplitCompressor(pools=POOLS, now=NOW, scorer=UNICODE, require_filter_keys=())
    again = PoolSplitCompressor.model_validate_json(compressor.model_dump_json())
    assert again.scorer == UNICODE
    got = again.compress_documents(lc_docs(), MESSAGE)
    assert [d.metadata["id"] for d in got] == ["fix", "db"]


@pytest.mark.parametrize("build", [
    lambda scorer: LlamaRetriever(nodes=li_nodes(), pools=POOLS, now=NOW, scorer=scorer),
    lambda scorer: PoolSplitPostprocessor(pools=POOLS, now=NOW, scorer=scorer,
                                          require_filter_keys=()),
    lambda scorer: PoolSplitMemoryBlock(store=[], pools=POOLS, now=NOW, scorer=scorer,
                                        require_filter_keys=()),
], ids=["retriever", "postprocessor", "memory_block"])
def test_llamaindex_components_write_a_configured_scorer_as_its_options(build):
    component = build(UNICODE)
    data = component.to_dict()
    assert data["scorer"] == {"words": "unicode"}
    for rebuilt in (type(component).from_dict(data), type(component).from_json(
            component.to_json())):
        assert rebuilt.to_dict() == data
    if isinstance(component, LlamaRetriever):
        assert li_ids(type(component).from_dict(data)) == ["fix", "db"]
    assert "scorer" not in build(make_scorer()).to_dict(exclude={"scorer"})


def test_a_configured_scorer_with_a_custom_reader_is_refused_by_name():
    custom = make_scorer(words=lambda text: frozenset(text.split()))
    lc = LangChainRetriever(documents=lc_docs(), pools=POOLS, scorer=custom, require_filter_keys=())
    with pytest.raises(NotSerializableError,
                       match=r"scorer is ConfiguredScorer\(words=<function.*custom word reader"):
        lc.model_dump_json()
    li = LlamaRetriever(nodes=li_nodes(), pools=POOLS, scorer=custom)
    with pytest.raises(NotSerializableError, match=r"scorer is ConfiguredScorer.*custom word"):
        li.to_dict()
    data = li.to_dict(exclude={"scorer"})
    assert "scorer" not in data
    again = LlamaRetriever.from_dict(data, scorer=UNICODE, now=NOW)
    assert li_ids(again) == ["fix", "db"]
