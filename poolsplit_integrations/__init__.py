"""Thin framework adapters over the poolsplit core.

Import the adapter you use; each needs only its own framework:

- ``poolsplit_integrations.langchain`` -- ``pip install 'poolsplit[langchain]'``
- ``poolsplit_integrations.llama_index`` -- ``pip install 'poolsplit[llamaindex]'``
- ``poolsplit_integrations.langgraph`` -- ``pip install 'poolsplit[langgraph]'``
  (``'poolsplit[postgres]'`` for LangGraph's PostgresStore)
- ``poolsplit_integrations.agents`` -- ``pip install 'poolsplit[agents]'``
  (middleware for LangChain 1.x's ``create_agent``)

This package imports neither framework itself, so using one adapter never
requires the other. Both adapters share one mapping between framework objects
and entry dicts (:mod:`poolsplit_integrations._entries`) and the machinery
beside it, one concern a module: the options (``_options``, their pydantic
fields generated in ``_models``), tenant filters (``_tenancy``), the living
store (``_live``), the call (``_select``), the candidates found per call and
the vector-store plan (``_candidates``), serialisation (``_serialise``). Each
adapter keeps only its framework's conversions; the core decides.
"""

__all__: list[str] = []
