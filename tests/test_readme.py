"""The README's examples run as written and print what they say they print.

Every ``python`` block of the quickstart and the two framework sections is
executed in order, one namespace per section (as a reader pastes them). A
comment line right after a ``print(...)`` line states expected output; each
such line must appear in what the section printed. Blocks in the tenancy
section are fragments (they name a request's user) and are not run.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.integrations._llamaindex_support import offline_llamaindex  # noqa: F401

README = Path(__file__).resolve().parent.parent / "README.md"
RUN = ("Core quickstart", "LangChain", "LlamaIndex")


def blocks_by_section() -> dict[str, list[str]]:
    """The README's ``python`` blocks, under the ``## `` heading they belong to."""
    out: dict[str, list[str]] = {}
    section = ""
    text = README.read_text(encoding="utf-8")
    for heading, block in re.findall(r"^## ([^\n]+)$|^```python\n(.*?)^```", text, re.M | re.S):
        if heading:
            section = heading.strip()
        else:
            out.setdefault(section, []).append(block)
    return out


def promised_output(code: str) -> list[str]:
    """Comment lines that follow a ``print(...)`` line: the output it promises."""
    promised, after_print = [], False
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith("print("):
            after_print = True
        elif after_print and stripped.startswith("# ") and stripped != "# ...":
            promised.append(stripped[2:])
        else:
            after_print = False
    return promised


def test_the_readme_has_runnable_blocks_in_every_section_it_promises():
    found = blocks_by_section()
    for section in RUN:
        assert found.get(section), f"no python block under '## {section}'"


@pytest.mark.usefixtures("offline_llamaindex")
@pytest.mark.parametrize("section", RUN)
def test_readme_examples_run_and_print_what_they_say(section):
    namespace: dict[str, object] = {"__name__": "readme"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for code in blocks_by_section()[section]:
            exec(compile(code, f"README.md ({section})", "exec"), namespace)
    output = printed.getvalue()
    assert output.strip(), f"the {section} examples printed nothing"
    promised = [line for code in blocks_by_section()[section] for line in promised_output(code)]
    for line in promised:
        assert line in output, f"README promises {line!r}; the {section} example printed:\n{output}"
