"""Run README blocks in a fresh interpreter that sees only one install; report what happened.

Used by ``tests/test_readme.py`` for the READMEs and the pages under ``docs/``:
``python tests/readme_runner.py`` reads
``{"blocks": [[first_line, code, continues], ...], "prelude": code,
"allowed": [dist, ...], "readme": name}`` as JSON on stdin (``readme``, the
README's or page's path from the repository root, defaults to ``README.md``;
``continues`` is optional and false by default).
Every installed distribution not in ``allowed`` is hidden (``allowed`` null: none is,
for an interpreter whose environment holds just that install):
importing one of its modules raises ``ModuleNotFoundError``, as if it were
not installed -- so a block runs as it would after ``pip install`` of just
its extra, and an optional import a library tries (``try: import numpy``)
behaves as it would there. Then the prelude runs, then each block in a fresh
namespace of its own, as a reader who copies that block alone runs it -- unless
the block is marked as continuing the one before (``<!-- continues -->``), when
it runs in that block's namespace. Each block is compiled at its own README
line, so a traceback and every ``print`` call name README lines. A block that
fails does not stop the others. The report, JSON on stdout: what each ``print``
line printed (all its calls, in order), every module imported since start-up
with its file, and the errors, if any, joined (``None`` when every block ran).
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.metadata
import io
import json
import os
import re
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType
from typing import Any


class Hidden(importlib.abc.MetaPathFinder):
    """Makes the modules of the given files unimportable, as if never installed."""

    def __init__(self, files: set[str]) -> None:
        self.files = files

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.origin and os.path.realpath(spec.origin) in self.files:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None  # found by the usual finders, or not at all


def files_outside(allowed: set[str]) -> set[str]:
    """The files of every installed distribution whose name is not in ``allowed``."""
    hidden = set()
    for dist in importlib.metadata.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        if name not in allowed:
            hidden |= {os.path.realpath(dist.locate_file(f)) for f in dist.files or ()}
    return hidden


def main() -> None:
    request = json.load(sys.stdin)
    readme = request.get("readme", "README.md")
    if request["allowed"] is not None:
        sys.meta_path.insert(0, Hidden(files_outside(set(request["allowed"]))))
    before = set(sys.modules)
    printed: dict[int, list[str]] = {}

    def recording_print(*args: Any, **kwargs: Any) -> None:
        frame = sys._getframe(1)
        if frame.f_code.co_filename == readme and "file" not in kwargs:
            buffer = io.StringIO()
            builtins.print(*args, **kwargs, file=buffer)
            printed.setdefault(frame.f_lineno, []).append(buffer.getvalue())
        builtins.print(*args, **kwargs)

    errors: list[str] = []
    namespace: dict[str, Any] = {}
    real_stdout = sys.stdout
    sys.stdout = io.StringIO()  # the blocks' own output stays out of the report
    try:
        exec(compile(request.get("prelude", ""), "prelude", "exec"), {"__name__": "prelude"})
        for first_line, code, *rest in request["blocks"]:
            continues = bool(rest and rest[0])
            if not continues:  # a fresh namespace: the block runs as if copied alone
                namespace = {"__name__": "__main__", "print": recording_print}
            try:
                exec(compile("\n" * (first_line - 1) + code, readme, "exec"), namespace)
            except Exception:  # report it: the test shows the reader's traceback
                errors.append(f"{readme} block at line {first_line}:\n"
                              + traceback.format_exc())
    except BaseException:  # the prelude, or an interrupt
        errors.append(traceback.format_exc())
    finally:
        sys.stdout = real_stdout
    error = "\n".join(errors) if errors else None
    modules = {
        name: getattr(module, "__file__", None)
        for name, module in list(sys.modules.items())
        if name not in before
    }
    json.dump({
        "printed": {str(line): "".join(texts) for line, texts in printed.items()},
        "modules": modules,
        "error": error,
    }, sys.stdout)


if __name__ == "__main__":
    main()
