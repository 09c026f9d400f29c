"""Running a parser where it can be bounded: a forked child process with a memory limit and a wall-time limit,
stopped at once when its caller no longer wants the result (the document was deleted).

Why a forked child, and not a thread, a signal or a fresh interpreter:
- memory can only be bounded per process (RLIMIT_AS); a parser that runs away in the worker itself takes the
  worker (and, past the machine's memory, its neighbours) with it. In a child it gets MemoryError, or dies,
  and the worker reports it and goes on;
- time: a parser in C (pdfium, lxml, Tesseract) cannot be interrupted from Python; a process can be killed,
  with its process group (Tesseract runs as a grandchild);
- a fresh interpreter (subprocess, multiprocessing's spawn) would import the parsers for every document
  (unstructured alone takes 2.5 s) and see none of the worker's state; a fork starts in milliseconds with the
  parsers the worker has imported (`preload`), and runs exactly the code the worker would have run.
  multiprocessing itself is not usable: django-q2's workers are daemonic processes, which it forbids to have
  children.

What a fork inherits and must not touch: the worker's database connection (the child never opens the
database: the ingestion package knows nothing of models) and its embedding threads (the child never embeds).
The child leaves with os._exit, so nothing of the worker's (atexit hooks, the embedded PostgreSQL's release,
buffered output) runs twice. It asks the kernel to kill it if the worker dies (PR_SET_PDEATHSIG).

The result comes back pickled in a nameless temporary file (no pipe to fill and block on). Exceptions come back
as themselves when they pickle, else as ParserCrashed naming their type.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pickle
import resource
import select
import signal
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_PR_SET_PDEATHSIG = 1
# Resolved before any fork: loading a library in a forked child of a threaded process can deadlock.
_prctl = ctypes.CDLL(None, use_errno=True).prctl
# Longest pause between two looks at the child (and at whether its result is still wanted).
_POLL = 0.25


class ParserCrashed(RuntimeError):
    """The parser died without an answer (killed by a signal), or raised what could not be sent back."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(detail or kind)
        self.kind = kind


class OutOfTime(Exception):
    """The parser ran past its wall time and was killed."""


class OutOfMemory(Exception):
    """The parser reached its memory limit (MemoryError, or it died of it)."""


class NoLongerWanted(Exception):
    """The caller's `keep_going` said no: the parser was killed, and its work dropped."""


@dataclass(frozen=True)
class Outcome(Generic[_T]):
    value: _T
    seconds: float
    peak_mb: int  # the child's peak resident memory


def run_bounded(
    function: Callable[..., _T],
    *args: Any,
    memory_mb: int,
    seconds: float,
    keep_going: Callable[[], bool] | None = None,
    directory: str | None = None,
) -> Outcome[_T]:
    """`function(*args)` in a forked child, allowed `memory_mb` more than the child starts with and `seconds` of
    wall time (0: no limit on either). `keep_going` is asked while it runs: False kills it (NoLongerWanted).

    Raises what the function raised, or OutOfTime, OutOfMemory, NoLongerWanted, ParserCrashed.
    """
    started = time.monotonic()
    with tempfile.TemporaryFile(dir=directory) as answer:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(function, args, answer, parent, memory_mb)
        # Also done by the child: whichever runs first, the group exists before a kill. OSError: the child has
        # already exited, or set it itself.
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        status, usage = _wait(pid, started, seconds, keep_going)
        elapsed = time.monotonic() - started
        peak_mb = usage.ru_maxrss // 1024
        answer.seek(0)
        payload = answer.read()
    if os.WIFSIGNALED(status) or not payload:
        signal_number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        if memory_mb and signal_number in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
            # A C library that cannot allocate aborts or crashes rather than raising: at a memory limit this is
            # the likely cause (the kernel's OOM killer, SIGKILL, too). Logged with the signal for whoever looks.
            logger.warning("parser child died of signal %s at %d MB (limit +%d MB)", signal_number, peak_mb, memory_mb)
            raise OutOfMemory(f"the parser died (signal {signal_number})")
        raise ParserCrashed("crash", f"the parser died (signal {signal_number}, exit status {status})")
    kind, value = pickle.loads(payload)
    if kind == "raised":
        if isinstance(value, MemoryError):
            raise OutOfMemory("the parser ran out of memory") from value
        raise value
    return Outcome(value=value, seconds=elapsed, peak_mb=peak_mb)


def _wait(
    pid: int, started: float, seconds: float, keep_going: Callable[[], bool] | None
) -> tuple[int, resource.struct_rusage]:
    with _exit_notice(pid) as exited:
        pause = 0.005  # without a pidfd: small documents parse in milliseconds, so look often at first
        while True:
            waited, status, usage = os.wait4(pid, os.WNOHANG)
            if waited:
                return status, usage
            if seconds and time.monotonic() - started > seconds:
                _kill(pid)
                raise OutOfTime(f"the parser ran longer than {seconds} s")
            if keep_going is not None and not keep_going():
                _kill(pid)
                raise NoLongerWanted("the parser's result is no longer wanted")
            if exited is not None:
                select.select([exited], [], [], _POLL)  # wakes the moment the child exits
            else:
                time.sleep(pause)
                pause = min(_POLL, pause * 2)


@contextlib.contextmanager
def _exit_notice(pid: int) -> Iterator[int | None]:
    """A file descriptor that becomes readable when the child exits (Linux 5.3+), or None where there is none.
    Sleeping and looking again would reap a 50 ms parse at 75 ms, and a 320 ms one at 565 ms."""
    try:
        descriptor = os.pidfd_open(pid)
    except (AttributeError, OSError):
        yield None
        return
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _kill(pid: int) -> None:
    """Kill the child and whatever it started (its process group), and reap it."""
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        with contextlib.suppress(ProcessLookupError):
            kill(target, signal.SIGKILL)
    os.waitpid(pid, 0)


def _child(function: Callable[..., Any], args: tuple[Any, ...], answer: Any, parent: int, memory_mb: int) -> None:
    code = 0
    try:
        os.setpgid(0, 0)  # its own process group: a kill reaches Tesseract too
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the worker died before the line above took effect
            os._exit(1)
        if memory_mb:
            _limit_memory(memory_mb)
        try:
            result: tuple[str, Any] = ("returned", function(*args))
        except BaseException as exc:  # everything goes back to the worker, which decides
            result = ("raised", exc)
        _send(answer, result)
    except BaseException:  # nothing may escape into the worker's code: the child must exit here
        code = 70
    finally:
        os._exit(code)


def _limit_memory(memory_mb: int) -> None:
    """Allow `memory_mb` of address space beyond what the child starts with (the worker's, shared copy-on-write:
    a limit on the total would depend on what the worker happened to load before)."""
    with open("/proc/self/status") as status:
        size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = size_kb * 1024 + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _send(answer: Any, result: tuple[str, Any]) -> None:
    kind, value = result
    if kind == "raised" and value.__traceback__ is not None:
        # The traceback does not travel; its text does, as a note the worker's log shows under its own.
        value.add_note("raised in the parser's child process:\n" + "".join(traceback.format_tb(value.__traceback__)))
    try:
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        data = pickle.dumps(("raised", MemoryError()))
    except Exception:  # an exception (or value) that does not pickle: its type still goes back
        shown = type(value).__name__
        logger.warning("parser child could not send back its %s (%s)", "error" if kind == "raised" else "result", shown)
        data = pickle.dumps(("raised", ParserCrashed(shown)))
    answer.write(data)
    answer.flush()
