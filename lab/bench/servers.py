"""llama.cpp's servers as child processes, for the served benchmarks and the tests that start
the real thing: `LlamaServer` (llama-cpp-python's server) and `LlamaCppServer` (llama.cpp's own
`llama-server`). The loopback test server is `gtsteer.testing.LoopbackServer`. `ThreadedServer`
is the Werewolf web app in a background thread (screenshots, the web tests)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Self

from gtsteer.llm import LLM

#: `python -c` program: llama-cpp-python's server with faulthandler's SIGUSR1 stack dump.
_SERVE_WITH_STACK_DUMPS = (
    "import faulthandler, runpy, signal, sys; "
    "faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "sys.argv[0] = 'llama_cpp.server'; "
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """llama-cpp-python's server as a child process; `kill()` and `start()` again on the
    same port, as an operator restarting a crashed server would."""

    def __init__(self, model_path: str | Path, log: Path, threads: int = 1):
        self.model_path = model_path
        self.threads = threads
        self.port = _free_port()
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        # Unbuffered, with faulthandler armed: a crash writes its stack to the log, and
        # SIGUSR1 (sent by `restart` to a server that stopped answering) dumps every thread's.
        return [sys.executable, "-u", "-X", "faulthandler", "-c", _SERVE_WITH_STACK_DUMPS,
                "--model", str(self.model_path), "--model_alias", "smollm2", "--n_threads",
                str(self.threads), "--host", "127.0.0.1", "--port", str(self.port)]

    def start(self, timeout_s: float = 180.0) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"llama.cpp server exited ({self.process.returncode}):\n{tail}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.5)  # not listening yet: poll again
        self.kill()
        raise RuntimeError(f"llama.cpp server not up within {timeout_s:g} s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def answers(self, timeout_s: float = 60.0) -> bool:
        """Whether the server is alive and answers `GET /models` within `timeout_s` (it waits for
        the request being decoded, so allow for a long one)."""
        if self.process is None or self.process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=timeout_s) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def restart(self) -> str:
        """Replace a server that died or stopped answering; returns what happened to it (exit
        status, or the stacks it dumped when hung), which is also in its log."""
        with self.log.open("ab") as out:
            out.write(b"\n--- restart requested by the test ---\n")
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGUSR1)  # faulthandler: dump every thread's stack
            time.sleep(2)
            what = "alive but not answering (stacks in the log)"
        else:
            what = f"exited with {None if self.process is None else self.process.returncode}"
        self.kill()
        self.start()
        return what


#: Context per slot of `LlamaCppServer`: a README-job prompt (~300 tokens) and its answer fit twice.
CTX_PER_SLOT = 1024


class LlamaCppServer(LlamaServer):
    """llama.cpp's `llama-server` with `slots` parallel sequences (continuous batching)."""

    def __init__(self, binary: Path, model_path: str | Path, log: Path, threads: int,
                 slots: int):
        super().__init__(model_path, log, threads=threads)
        self.binary, self.slots = binary, slots

    def command(self) -> list[str]:
        return [str(self.binary), "-m", str(self.model_path), "--alias", "smollm2",
                "--host", "127.0.0.1", "--port", str(self.port), "--threads", str(self.threads),
                "--threads-batch", str(self.threads), "--parallel", str(self.slots),
                "--ctx-size", str(CTX_PER_SLOT * self.slots)]


class ThreadedServer:
    """The app under uvicorn on a free loopback port, in a background thread (scripts, tests)."""

    def __init__(self, db: str | Path, models: list[str],
                 llm_factory: Callable[[str], LLM] | None = None):
        import uvicorn

        from gtsteer.werewolf.web.server import MAX_HEAD_BYTES, build_app

        self.app = build_app(db, models, llm_factory=llm_factory)
        self.manager = self.app.state.manager
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                timeout_graceful_shutdown=2, http="h11",
                                h11_max_incomplete_event_size=MAX_HEAD_BYTES)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = ""

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the werewolf web server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)
