"""`molp2s` commands forked from an interpreter that has already imported the package.

The docs test and the --help examples run about ninety commands the way a reader types them,
each a new Python process that imports polars, DuckDB, SciPy and, for the model's commands,
ArviZ, PyMC and JAX again: 1–7 s of imports a command, about a third of those tests' time on
two cores. Here one server a test process imports them once; a command is a `molp2s` on PATH
(a small client) that hands the server its arguments, folder, environment and standard
streams, and the server forks a child that runs the command's `main()` there, exits as the
command would (finalisers and all: a DuckDB file is closed before the exit status comes back)
and is waited for. Each command is still its own process, forked from the same clean parent,
so nothing one command does is seen by the next.

What the server imports is only imported: no thread pool is started before a fork (polars,
DuckDB and JAX start theirs on first use, and a pool does not survive a fork).
Where the server is not there, the client runs the installed `molp2s` itself.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

INSTALLED = Path(sys.executable).parent / "molp2s"

# imported before any fork: what the commands import, heaviest first (their module-level code runs
# no polars, DuckDB or JAX computation)
PRELOAD = (
    "arviz",
    "pymc",
    "jax.numpy",
    "scipy.stats",
    "polars",
    "duckdb",
    "molp2s_stats.cli",
    "molp2s_stats.stats.metrics",
    "molp2s_stats.stats.stability",
    "molp2s_stats.stats.audit",
    "molp2s_stats.ingest",
    "molp2s_stats.bayes.fit",
    "molp2s_stats.bayes.posterior",
    "molp2s_stats.report.render",
)

CLIENT = """\
#!{python} -IS
import json, os, socket, sys
try:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect({socket!r})
except OSError:  # no server: the installed command
    os.execv({installed!r}, [{installed!r}, *sys.argv[1:]])
request = {{"argv": [{installed!r}, *sys.argv[1:]], "cwd": os.getcwd(), "env": dict(os.environ)}}
socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2])
connection.shutdown(socket.SHUT_WR)
answer = b""
while chunk := connection.recv(64):
    answer += chunk
sys.exit(int(answer or b"1"))
"""


def _run_command(connection: socket.socket) -> None:
    """In the forked child: become the command the client asked for, run it, and exit as it would."""
    chunks, fds = [], []
    while True:
        data, received, _flags, _address = socket.recv_fds(connection, 1 << 20, 3)
        fds += received
        if not data:
            break
        chunks.append(data)
    connection.close()
    request = json.loads(b"".join(chunks))
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    # new streams on the client's descriptors, set up as a new interpreter's would be for pipes
    sys.stdin = open(0, closefd=False, encoding="utf-8")  # noqa: SIM115
    sys.stdout = open(1, "w", closefd=False, encoding="utf-8")  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="backslashreplace", buffering=1)  # noqa: SIM115
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = request["argv"]
    sys.path[0] = str(Path(sys.argv[0]).parent)  # as for the console script: its own folder, not the server's
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.modules["__main__"].__package__ = None  # click names the program from argv[0], as for the console script
    from molp2s_stats.cli import main

    try:
        main()
        code = 0
    except SystemExit as stop:
        code = _exit_status(stop.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _exit(code)


def _exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process (a message is printed, and is status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _exit(code: int) -> None:
    """Exit as an interpreter does, as far as a command can tell (threads joined, exit handlers run,
    objects in reference cycles collected, so that a DuckDB connection held in one closes its file;
    streams flushed), without freeing the modules imported before the fork one by one (about a second
    of a new interpreter's exit with ArviZ, PyMC and JAX loaded)."""
    threading._shutdown()  # what the interpreter calls first at exit: non-daemon threads are waited for
    atexit._run_exitfuncs()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def serve(path: str) -> None:
    """Accept commands on the Unix socket ``path`` until terminated; one forked child each."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    gc.freeze()  # what is loaded now is never collected: a child's collection at exit skips it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    waiting: dict[int, socket.socket] = {}  # child pid → the client's connection, told the status at its exit
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for _ in selector.select(timeout=0.02):
            connection, _ = listener.accept()
            pid = os.fork()
            if pid == 0:
                selector.close()
                listener.close()
                for other in waiting.values():
                    other.close()
                _run_command(connection)  # does not return: the child exits with the command's status
            waiting[pid] = connection
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            connection = waiting.pop(pid, None)
            if connection is not None:
                code = os.waitstatus_to_exitcode(status)
                with contextlib.suppress(OSError):
                    connection.sendall(str(code if code >= 0 else 128 - code).encode())
                connection.close()


@contextlib.contextmanager
def warm_molp2s(folder: Path) -> Iterator[Path]:
    """A folder holding a `molp2s` served by a warm interpreter, for the front of PATH, while in use."""
    folder.mkdir(parents=True, exist_ok=True)
    # a Unix socket's path is limited to about 100 bytes: pytest's temporary folders can be longer
    address = f"/tmp/molp2s-warm-{os.getpid()}-{time.monotonic_ns()}.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.warm_cli", address],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert server.stdout.readline().strip() == "ready", "the warm molp2s server did not start"
        client = folder / "molp2s"
        client.write_text(CLIENT.format(python=sys.executable, socket=address, installed=str(INSTALLED)))
        client.chmod(0o755)
        yield folder
    finally:
        server.terminate()
        server.wait(timeout=30)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(address)


if __name__ == "__main__":
    serve(sys.argv[1])
