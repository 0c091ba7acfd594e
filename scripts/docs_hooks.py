"""What the documentation site needs beyond mkdocs-material and mkdocstrings.

Both are named in ``mkdocs.yml``:

- ``on_files``, an mkdocs hook, puts ``benchmarks/profiles.png`` (the plot
  ``make bench-profiles`` writes) into the site as ``assets/profiles.png``, and
  ``benchmarks/langgraph.png`` (the plot ``bench_langgraph.py`` writes) as
  ``assets/langgraph.png``, so the performance page shows the plots of the last
  runs, with no copy to keep in step;
- ``DoctestFences``, a griffe extension used by the API reference, shows the
  ``>>>`` examples of the docstrings as Python code (Markdown would read them as
  prose: ``['fix', 'a']`` in an output line looks like a link reference, and the
  strict build fails on it), and the docstrings' Sphinx roles
  (``:func:`coverage```) as code, which Markdown would print as they are.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

#: Files outside ``docs/`` that the site shows: path in the site -> path in the repository.
GENERATED = {"assets/profiles.png": "benchmarks/profiles.png",
             "assets/langgraph.png": "benchmarks/langgraph.png"}
FENCE = "```"
#: A Sphinx cross-reference role, ``:func:`name``` or ``:class:`~module.Name```.
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj):`(~?)([^`]+)`")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the files of ``GENERATED`` to the site, read from where they are made."""
    root = Path(config.config_file_path).parent
    for uri, source in GENERATED.items():
        files.append(File.generated(config, uri, abs_src_path=str(root / source)))
    return files


def fence_doctests(text: str) -> str:
    """Wrap every doctest of ``text`` in a pycon fence; leave the rest as it is.

    A doctest runs from its first ``>>>`` line to the next blank line, as
    doctest reads it; text already inside a fence is left alone.

    >>> fence_doctests("Example:\\n>>> 1 + 1\\n2\\n\\nDone.").splitlines()
    ['Example:', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'Done.']
    """
    out: list[str] = []
    in_fence = in_doctest = False
    indent = ""
    for line in text.splitlines():
        stripped = line.strip()
        if in_doctest and not stripped:
            out.append(indent + FENCE)
            in_doctest = False
        if stripped.startswith(FENCE) and not in_doctest:
            in_fence = not in_fence
        elif not in_fence and not in_doctest and stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            if out and out[-1].strip():
                out.append("")  # a fence opens a block of its own
            out.append(indent + FENCE + "pycon")
            in_doctest = True
        out.append(line)
    if in_doctest:
        out.append(indent + FENCE)
    return "\n".join(out)


def plain_roles(text: str) -> str:
    """Show each Sphinx role as code: its target, or with ``~`` the target's last name.

    >>> plain_roles("See :func:`coverage` and :class:`~poolsplit_core.poolsplit.Pool`.")
    'See `coverage` and `Pool`.'
    """
    return ROLE.sub(lambda m: "`" + (m[2].rsplit(".", 1)[-1] if m[1] else m[2]) + "`", text)


class DoctestFences(griffe.Extension):
    """Fence the doctests and plain the roles of every docstring, as each object is read."""

    # on_instance, not griffe 2's on_object: griffe 1.x has it too, and a docstring
    # is complete as soon as its object is.
    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring for Markdown."""
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(fence_doctests(obj.docstring.value))
