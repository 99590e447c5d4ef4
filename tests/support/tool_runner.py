"""`run(argv, ...)`: subprocess.run for `[sys.executable, "tools/X.py", ...]`, forked from a
server that has imported bert_keras and TensorFlow already.

Each tool process otherwise spends about 6 s of CPU importing TensorFlow before it looks at
its flags, and the suite runs the tools well over a hundred times. Forked, the tool runs as
its own process (its exit status, stdout, stderr, tracebacks, directory, environment and
session), minus the imports: for tests of what a tool does with its flags, files and data.
Tests of start-up itself (quiet start, kernels chosen from the environment at import,
resource limits set in the child, closed standard streams) keep subprocess.run.
BERT_KERAS_TESTS_FORK=0 runs every call as a plain subprocess instead.

Example:
    proc = tool_runner.run([sys.executable, "tools/pretrain.py", "--help"],
                           capture_output=True, text=True)
    proc = tool_runner.run_tool("pretrain", "--help")  # the same, from the repository root
"""

import atexit
import hashlib
import json
import os
import pathlib
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SERVER = pathlib.Path(__file__).resolve().parent / "tool_server.py"
# `[sys.executable, TWO_CPU_DEVICES, "tools/X.py", ...]`: the tool on two logical CPU devices
# (two replicas for --distribution_strategy=mirrored), forked like any tool.
TWO_CPU_DEVICES = str(pathlib.Path(__file__).resolve().parent / "two_cpu_devices.py")
REPO = pathlib.Path(__file__).resolve().parents[2]
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}  # TF's own start-up chatter
_lock = threading.Lock()
_server = None
_code_dir = None  # run_code's scripts


def _start_server():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # one thread: safe to fork
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    server = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    atexit.register(_stop_server, server)
    return server


def _stop_server(server):
    server.stdin.close()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()


def _is_tool(argv):
    return (os.environ.get("BERT_KERAS_TESTS_FORK", "1") != "0" and len(argv) >= 2
            and argv[0] == sys.executable and argv[1].endswith(".py"))


def _forkable(argv, kwargs):
    return (_is_tool(argv) and kwargs.get("capture_output")
            and set(kwargs) <= {"capture_output", "text", "cwd", "env", "timeout", "input"})


class Started:
    """A tool forked from the server and still running: `pid`, `poll()`, `wait()` and
    `returncode` as subprocess.Popen has them (see `start`). The server serves nothing else
    until it is waited for."""

    def __init__(self, argv, cwd, env, timeout, data, stdout=None, stderr=None):
        self._dir = tempfile.mkdtemp(prefix="tool_run_")
        paths = {name: os.path.join(self._dir, name) for name in ("stdin", "stdout", "stderr")}
        with open(paths["stdin"], "wb") as f:
            f.write(data)
        for name in ("stdout", "stderr"):
            open(paths[name], "wb").close()
        self._outputs = paths["stdout"], paths["stderr"]
        for name, path in (("stdout", stdout), ("stderr", stderr)):
            if path is not None:  # the tool opens it write-only: it must exist
                open(path, "wb").close()
                paths[name] = path
        request = dict(argv=argv, cwd=os.fspath(cwd or os.getcwd()), env=dict(env or os.environ),
                       timeout=timeout, **paths)
        self.argv, self.returncode, self._waited = argv, None, False
        global _server
        _lock.acquire()  # one request at a time per server: released by wait()
        try:
            if _server is None or _server.poll() is not None:
                _server = _start_server()
            pickle.dump(request, _server.stdin)
            _server.stdin.flush()
            self.pid = self._reply()["pid"]
        except BaseException:
            _lock.release()
            raise

    def _reply(self):
        try:
            reply = pickle.load(_server.stdout)
        except EOFError:  # a bug of the server, not of the tool
            raise RuntimeError(f"tool_server.py died running {self.argv[1:]}; "
                               "BERT_KERAS_TESTS_FORK=0 runs plain subprocesses") from None
        if "error" in reply:  # the server refused to fork, said why and exits
            _server.wait()  # so that the next call starts a new one
            raise RuntimeError(reply["error"])
        return reply

    def poll(self):
        """The exit status once the tool has ended (None while it runs, as Popen.poll)."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                running = f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            running = False
        return None if running and not self._waited else self.wait()

    def wait(self):
        """The exit status (-N for signal N; None if it ran past its timeout). Its output is
        then in `stdout` and `stderr` (bytes), and its temporary files are gone."""
        if not self._waited:
            try:
                self.returncode = self._reply()["returncode"]
            finally:
                self._waited = True
                _lock.release()
            self.stdout, self.stderr = (pathlib.Path(path).read_bytes() for path in self._outputs)
            shutil.rmtree(self._dir, ignore_errors=True)
        return self.returncode


def start(argv, cwd=REPO, env=None, stdout=os.devnull, stderr=os.devnull):
    """subprocess.Popen(argv, stdout=DEVNULL, stderr=DEVNULL), forked from the server for a
    Python tool (`[sys.executable, "tools/X.py", ...]`): for tests that kill a tool while it
    runs (`os.kill(started.pid, SIGKILL)`, then `started.wait()` before the next tool call),
    or run it beside another process (a worker of a local cluster). `stdout`, `stderr`: the
    paths of files for its output (default: discarded)."""
    argv = [os.fspath(a) for a in argv]
    stdout, stderr = os.fspath(stdout), os.fspath(stderr)
    if not _is_tool(argv):
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            return subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err)
    return Started(argv, cwd, env, None, b"", stdout=stdout, stderr=stderr)


def run_two_workers(argv, cwd, envs, outputs, timeout=600):
    """Runs `argv` as the two workers of a local cluster: worker 1 a fresh interpreter and
    worker 0 (the chief) a tool forked from the server once worker 1's server listens (a
    script: another fresh interpreter, started with it). `envs[i]`: worker i's environment
    (its TF_CONFIG); `outputs[i]`: its (stdout, stderr) file paths. Waits up to `timeout` s
    for each, then kills one still running (waiting on the other's collective). Returns the
    two exit codes.

    A worker that finds its peer not listening yet retries with gRPC's growing backoff (1 s,
    then 1.6 times longer each time): a chief forked at once waited seconds more the longer
    the fresh interpreter took to import TensorFlow (12-30 s for one test)."""
    argv, procs = [os.fspath(a) for a in argv], []
    try:
        with open(outputs[1][0], "wb") as out, open(outputs[1][1], "wb") as err:
            procs.append(subprocess.Popen(argv, cwd=cwd, env=envs[1], stdout=out, stderr=err))
        if _is_tool(argv):  # a forked chief starts at once
            _wait_until_listening(json.loads(envs[1]["TF_CONFIG"])["cluster"]["worker"][1],
                                  procs[0], timeout)
        stdout, stderr = outputs[0]
        procs.insert(0, start(argv, cwd=cwd, env=envs[0], stdout=stdout, stderr=stderr))
        procs[1].wait(timeout=timeout)
        deadline = time.monotonic() + timeout
        while procs[0].poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    return [proc.returncode for proc in procs]


def _wait_until_listening(address, proc, timeout):
    """Returns when `address` ("host:port") takes a connection, `proc` has exited, or after
    `timeout` s."""
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)


def _serve(argv, cwd, env, timeout, data, stdout=None, stderr=None):
    """Runs argv forked from the server: stdin `data` (bytes), stdout and stderr into files
    (or at the paths given). Returns (exit status or None on a timeout, stdout, stderr)."""
    started = Started(argv, cwd, env, timeout, data, stdout, stderr)
    return started.wait(), started.stdout, started.stderr


def run(argv, **kwargs):
    """subprocess.run(argv, **kwargs) for a Python tool, forked from the server (see the
    module docstring); other calls go to subprocess.run as they are."""
    argv = [os.fspath(a) for a in argv]
    if not _forkable(argv, kwargs):
        return subprocess.run(argv, **kwargs)
    text, data = kwargs.get("text", False), kwargs.get("input")
    returncode, out, err = _serve(argv, kwargs.get("cwd"), kwargs.get("env"),
                                  kwargs.get("timeout"),
                                  b"" if data is None else data.encode() if text else data)
    if text:
        out, err = out.decode(), err.decode()
    if returncode is None:
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"], out, err)
    return subprocess.CompletedProcess(argv, returncode, out, err)


def run_code(code, *args, **kwargs):
    """subprocess.run([sys.executable, "-c", code, *args], **kwargs), forked from the server as
    `run` forks a tool: the code is written to a file first (sys.argv[0] is its path)."""
    global _code_dir
    if _code_dir is None:
        _code_dir = tempfile.mkdtemp(prefix="tool_runner_code_")
        atexit.register(shutil.rmtree, _code_dir, True)
    script = pathlib.Path(_code_dir, f"code_{hashlib.sha1(code.encode()).hexdigest()[:16]}.py")
    if not script.exists():
        script.write_text(code)
    return run([sys.executable, script, *args], **kwargs)


def run_on_terminal(argv, terminal, env=None, cwd=REPO, timeout=600):
    """Runs a Python tool (argv as for `run`) with stdin empty, stdout discarded and stderr
    on `terminal` (a pseudo-terminal's path, `os.ttyname` of its slave end): what a person
    watching it sees. Forked from the server as `run` does; returns the exit status."""
    argv = [os.fspath(a) for a in argv]
    if os.environ.get("BERT_KERAS_TESTS_FORK", "1") == "0":
        with open(terminal, "w") as stderr:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=stderr, env=env, cwd=cwd, timeout=timeout).returncode
    returncode, _, _ = _serve(argv, cwd, env, timeout, b"", stdout=os.devnull, stderr=terminal)
    if returncode is None:
        raise subprocess.TimeoutExpired(argv, timeout)
    return returncode


def run_tool(name, *args, text=True, input=None, env=None, timeout=600):
    """`run` of tools/NAME.py with `args`, from the repository root, its output captured;
    the environment is this one, TensorFlow's start-up logs quiet, plus `env`."""
    return run([sys.executable, str(REPO / "tools" / f"{name}.py"), *map(str, args)],
               capture_output=True, text=text, input=input, cwd=REPO, timeout=timeout,
               env={**os.environ, **QUIET, **(env or {})})
