"""The process that tool_runner.py forks the tools from (run by it, not by hand).

It imports what the tools import (`PRELOADED`: bert_keras, so TensorFlow, Keras and tf-text)
once, single-threaded (OPENBLAS_NUM_THREADS=1 is set by the runner before numpy loads, so a
fork copies the only thread there is; checked at start-up), and freezes that heap for the
garbage collector; then it reads requests (pickled dicts: argv, cwd, env, and the paths of the
child's stdin, stdout and stderr files) from its stdin. For each it forks; the child leaves
the loop and runs the tool as `python tools/X.py ARGS` would (`__main__`, sys.argv, sys.path[0],
the request's environment and working directory, its own session), so exit status, output
and tracebacks are the tool's own. The server answers with the child's pid, then with its
exit status.
"""

import atexit
import faulthandler
import gc
import importlib
import os
import pickle
import runpy
import signal
import sys
import threading
import time

# What the tools import, found by listing the modules that tool runs of the tests added after
# the fork: imported here once instead of in every tool. Only modules whose import runs no
# TensorFlow op and starts no thread, reads no environment variable and defines no absl flag
# (a tool does those with its own request's environment and flags). Left out on purpose:
# bert_keras_tools.startup (lists devices and reads TF_CPP_MIN_LOG_LEVEL on import), the tools'
# own modules (they define flags), tensorflow_datasets (reads HOME and TFDS_DATA_DIR on import:
# its default data_dir would be the server's).
PRELOADED = (
    "bert_keras",  # TensorFlow, Keras, tf-text: ~3 s of CPU per tool otherwise
    "bert_keras.serving.client",
    "bert_keras_tools.absl_main",
    "bert_keras_tools.progress",
    "bert_keras_tools.text_io",
    "numpy.random",  # its global RandomState is reseeded in each forked tool
)


def load_shared_heap():
    """Imports PRELOADED with the garbage collector off, then freezes every object so far: a
    forked tool's full collections skip the inherited heap (~0.17 s of CPU each in every tool
    run otherwise, and they dirtied its pages). Returns why forking is unsafe, or None."""
    gc.disable()
    for name in PRELOADED:
        importlib.import_module(name)
    gc.freeze()
    gc.enable()
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:  # a fork copies only the calling thread: TensorFlow's pools would be lost
        return (f"tool_server.py has {threads} threads after importing {', '.join(PRELOADED)}; "
                "an import started TensorFlow's runtime or a thread pool, and forked tools "
                "would hang. BERT_KERAS_TESTS_FORK=0 runs plain subprocesses")
    return None


def serve(requests, replies):
    """Answers requests until stdin closes; returns a request only in a forked child."""
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            sys.exit(0)
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            return request
        pickle.dump({"pid": pid}, replies)  # a test may signal the tool while it runs
        replies.flush()
        pickle.dump({"returncode": _wait(pid, request["timeout"])}, replies)
        replies.flush()


def _wait(pid, timeout):
    """The child's exit status as subprocess reports it (-N for signal N); None if it ran
    past `timeout` seconds (then its whole session is killed)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.005)


def become_the_tool(request):
    """In the child: the request's stdio, directory, environment and argv, then the tool."""
    sys.modules["numpy.random"].seed()  # from the OS, as a fresh process seeds it on import
    os.setsid()  # its own session: a timeout kills the tool and whatever it started
    # Ctrl-C raises KeyboardInterrupt, as in a python started from a terminal, even where the
    # suite runs as a background job (which starts it, and so the server, ignoring SIGINT).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for fd, (path, flags) in enumerate([(request["stdin"], os.O_RDONLY),
                                        (request["stdout"], os.O_WRONLY),
                                        (request["stderr"], os.O_WRONLY)]):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if os.environ.get("PYTHONFAULTHANDLER"):  # as a fresh interpreter reads it at start-up
        faulthandler.enable()
    sys.argv = list(request["argv"][1:])  # argv[0] the script as given, as python sets it
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")


def exit_without_teardown(ended):
    """Ends the process as the interpreter ends on `ended` (a SystemExit, or None once the
    tool returned): its threads joined, atexit handlers run, sys.exit's message printed, the
    standard streams flushed; minus the teardown of every module and object, which walks the
    whole heap inherited from the server: ~0.9 s of CPU per tool run, against ~0.02 s."""
    code = None if ended is None else ended.code
    message = None if code is None or isinstance(code, int) else f"{code}\n"
    _quietly(lambda: message and sys.stderr.write(message))  # first, as python prints it
    threading._shutdown()
    atexit._run_exitfuncs()
    _quietly(lambda: sys.stdout.flush())
    _quietly(lambda: sys.stderr.flush())
    os._exit(1 if message else code or 0)


def _quietly(write):
    try:
        write()
    except (AttributeError, OSError, ValueError):  # a stream the tool closed or replaced
        pass


if __name__ == "__main__":
    # Requests and replies move off fds 0 and 1, which the children take as their stdio.
    requests_in = os.fdopen(os.dup(0), "rb")
    replies_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    unsafe = load_shared_heap()
    if unsafe:  # told to the test that asks for a tool (the server's stderr is discarded)
        pickle.dump({"error": unsafe}, replies_out)
        replies_out.flush()
        os._exit(1)
    try:
        become_the_tool(serve(requests_in, replies_out))
    except SystemExit as ended:  # the tool's exit (or the server's, once stdin closed)
        exit_without_teardown(ended)
    exit_without_teardown(None)  # an exception never gets here: traceback, exit 1, as python
