"""Draw docs/assets/trace-phoenix.png: a real trace of the demo in a local Arize Phoenix.

One demo query ("Run the invoices table migration on production tonight") is read from the
shipped sample store by a ``PoolSplitRetriever`` in a small LCEL chain, with poolsplit's own
spans and OpenInference's LangChain instrumentation both exported over OTLP to a Phoenix
server this script starts on a free local port. A headless chromium then opens the trace,
selects poolsplit's ``search_memory`` span and saves its attributes as Phoenix shows them.

What it needs is not a dependency of poolsplit (the picture is redrawn by hand, when the
attributes change)::

    pip install '.[langchain,otel]' arize-phoenix opentelemetry-sdk \
        opentelemetry-exporter-otlp-proto-http openinference-instrumentation-langchain playwright
    python scripts/trace_picture.py          # chromium: Debian's, which make test installs
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "assets" / "trace-phoenix.png"
PROJECT = "poolsplit-demo"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_phoenix(port: int, workdir: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PHOENIX_WORKING_DIR": workdir, "PHOENIX_PORT": str(port),
           "PHOENIX_HOST": "127.0.0.1", "PHOENIX_TELEMETRY_ENABLED": "false"}
    server = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            return server
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("Phoenix did not start within 60 s")


def send_trace(port: int) -> None:
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from poolsplit_core.demo import DEMO_NOW, DEMO_QUERIES, SPLIT_POOLS, load_sample_store
    from poolsplit_integrations.langchain import PoolSplitRetriever

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")))
    trace.set_tracer_provider(provider)
    LangChainInstrumentor().instrument(tracer_provider=provider)

    documents = [Document(id=str(entry["id"]), page_content=str(entry.get("content", "")),
                          metadata={k: v for k, v in entry.items() if k not in ("id", "content")})
                 for entry in load_sample_store()]
    retriever = PoolSplitRetriever(documents=documents, pools=list(SPLIT_POOLS), now=DEMO_NOW)
    query = DEMO_QUERIES[2]
    chain = RunnableLambda(lambda message: message) | retriever.with_config(
        run_name="memory", configurable={})
    chain.invoke(query["message"])
    provider.force_flush()


def draw(port: int) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"http://127.0.0.1:{port}/projects")
        page.get_by_text(PROJECT, exact=True).first.click()
        page.get_by_text("search_memory PoolSplitRetriever").first.click()
        page.wait_for_timeout(1500)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(OUT))
        browser.close()


def main() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        server = start_phoenix(port, workdir)
        try:
            send_trace(port)
            time.sleep(2)  # (Phoenix writes what it received in the background)
            draw(port)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
