"""`molp2s` commands forked from an interpreter that has already imported the package.

The docs test and the --help examples run about ninety commands the way a reader types them,
each a new Python process that imports polars, DuckDB, SciPy and, for the model's commands,
ArviZ, PyMC and JAX again: 1–7 s of imports a command (forked, `--help` took 0.16 s instead
of 0.38 s, `metrics` 0.9 s instead of about 3 s). Here one server a test process imports them
once; a command is a `molp2s` on PATH (a small client) that hands the server its arguments,
folder, environment and standard streams, and the server forks a child that runs the command's
`main()` there, exits as the command would (finalisers and all: a DuckDB file is closed before
the exit status comes back) and is waited for. Each command is still its own process, forked from the same clean parent,
so nothing one command does is seen by the next.

The same server starts the report's Jupyter kernels for these tests (a `python3` kernel spec
whose command is the client, found first through JUPYTER_PATH): a page's kernel is forked with
ipykernel and the pages' libraries imported, as the kernel of a worker's second page finds them
(the report reuses a worker's kernel from page to page), instead of importing them again, about
5 s a kernel. The client passes its signals on to the child (an interrupt, a kernel's shutdown),
and a child whose client is killed is killed too.

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
    # the report's kernels: ipykernel and what the pages import
    "ipykernel.kernelapp",
    "altair",
    "great_tables",
    "molp2s_stats.report.context",
    "molp2s_stats.report.tables",
    "molp2s_stats.report.charts",
    "molp2s_stats.bayes.health",
    "molp2s_stats.bayes.predictive",
)

KERNEL = "--kernel"  # the client's first argument when it stands for a kernel (the kernel spec's argv)

CLIENT = """\
#!{python} -IS
import json, os, signal, socket, struct, sys
try:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect({socket!r})
except OSError:  # no server: the installed command
    if sys.argv[1:2] == [{kernel!r}]:
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *sys.argv[2:]])
    os.execv({installed!r}, [{installed!r}, *sys.argv[1:]])
request = json.dumps({{"argv": [{installed!r}, *sys.argv[1:]], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(connection, [struct.pack("!Q", len(request)) + request], [0, 1, 2])
reader = connection.makefile("rb")
child = int(reader.readline())
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, lambda number, frame: os.kill(child, number))
sys.exit(int(reader.readline() or b"1"))
"""


def _read_request(connection: socket.socket) -> tuple[dict, list[int]]:
    """The client's request (argv, cwd, env) and its standard streams' descriptors."""
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 20, 3)
    size = int.from_bytes(data[:8], "big")
    data = data[8:]
    while len(data) < size:
        more = connection.recv(size - len(data))
        if not more:
            raise ConnectionError("the client went away before its request was whole")
        data += more
    return json.loads(data), fds


def _run_command(request: dict, fds: list[int]) -> None:
    """In the forked child: become the command the client asked for, run it, and exit as it would."""
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
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    kernel = request["argv"][1:2] == [KERNEL]
    if kernel:
        # as `python -m ipykernel_launcher -f …` started by jupyter_client: the launcher takes its own folder
        # off sys.path (IPython puts the working folder back), and the launching process, which
        # ipykernel reads from JPY_PARENT_PID when it is imported (the server's import, here), is given
        sys.argv = [sys.executable, *request["argv"][2:]]
        del sys.path[0]
        if os.environ.get("JPY_PARENT_PID"):
            sys.argv.append(f"--IPKernelApp.parent_handle={int(os.environ['JPY_PARENT_PID'])}")
    else:  # as the console script: its own folder first on sys.path, click naming the program from argv[0]
        sys.argv = request["argv"]
        sys.path[0] = str(Path(sys.argv[0]).parent)
        sys.modules["__main__"].__package__ = None
    try:
        if kernel:
            from ipykernel import kernelapp

            kernelapp.launch_new_instance()
        else:
            from molp2s_stats.cli import main

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
    children: dict[int, socket.socket] = {}  # a child → its client's connection, told the status at its exit
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for key, _ in selector.select(timeout=0.02):
            if key.fileobj is not listener:  # a client closed its end before its child ended: it was killed
                with contextlib.suppress(OSError):
                    if key.fileobj.recv(1) == b"":
                        os.kill(key.data, signal.SIGKILL)
                continue
            connection, _ = listener.accept()
            try:
                request, fds = _read_request(connection)
            except (OSError, ValueError):
                connection.close()
                continue
            pid = os.fork()
            if pid == 0:
                selector.close()
                listener.close()
                for other in (connection, *children.values()):
                    other.close()
                _run_command(request, fds)  # does not return: the child exits with the command's status
            for fd in fds:
                os.close(fd)
            children[pid] = connection
            with contextlib.suppress(OSError):
                connection.sendall(f"{pid}\n".encode())
            selector.register(connection, selectors.EVENT_READ, data=pid)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            connection = children.pop(pid, None)
            if connection is not None:
                selector.unregister(connection)
                code = os.waitstatus_to_exitcode(status)
                with contextlib.suppress(OSError):
                    connection.sendall(f"{code if code >= 0 else 128 - code}\n".encode())
                connection.close()


def warm_jupyter_path(commands: Path) -> str:
    """JUPYTER_PATH for an environment whose report kernels the warm server starts: the kernel spec
    ``warm_molp2s`` wrote beside its client first, then whatever JUPYTER_PATH named."""
    return os.pathsep.join(p for p in (str(commands / "jupyter"), os.environ.get("JUPYTER_PATH", "")) if p)


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
        client.write_text(CLIENT.format(python=sys.executable, socket=address, installed=str(INSTALLED), kernel=KERNEL))
        client.chmod(0o755)
        # the kernel spec Jupyter finds first where JUPYTER_PATH names folder/jupyter
        spec = folder / "jupyter" / "kernels" / "python3"
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [str(client), KERNEL, "-f", "{connection_file}"],
                    "display_name": "Python 3 (ipykernel, warm)",
                    "language": "python",
                    "metadata": {"debugger": True},
                }
            )
        )
        yield folder
    finally:
        server.terminate()
        server.wait(timeout=30)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(address)


if __name__ == "__main__":
    serve(sys.argv[1])
