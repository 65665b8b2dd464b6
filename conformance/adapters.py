"""Adapters: how the runner talks to an implementation.

An adapter is any object with the two methods of `Adapter`. The runner calls `check` for
the `syntax` and `validation` levels and `run` for the executing levels. Raising
`NotSupported` marks a case `not_supported`; any other exception marks it `error`.

Three ways to name one on the command line:

- `reference`: the reference interpreter and verifier, in process (`ReferenceAdapter`);
- `python:pkg.mod:Class`: a class (or factory) importable by Python, called with no arguments;
- `--adapter-cmd 'CMD {ktir} {inputs} {outputs}'`: an external program run once per case
  (`CommandAdapter`), or with `--adapter-protocol persistent` a program started once per
  worker that serves many cases over JSON lines (`PersistentCommandAdapter`); both contracts
  are documented in docs/guides/conformance.md.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from conformance.reported import PROTOCOL, Reported, coerce_all, errors, from_text
from conformance.values import read_npz, write_npz

EXIT_OK, EXIT_REJECTED, EXIT_NOT_SUPPORTED = 0, 1, 77


class NotSupported(Exception):
    """The implementation does not support this case (an op, a type, a grid size...)."""


class AdapterError(Exception):
    """The adapter cannot be loaded or did not follow its contract."""


@dataclass
class CheckResult:
    """What an implementation says about a program without running it.

    `diagnostics` holds what it reported: `Reported` objects (or dicts, or objects with `id`,
    `line`, `column`, `severity` attributes) carrying the line each points at, which the
    validation level needs (adapter protocol 2), or bare ID strings (protocol 1: enough for
    the syntax level, not for validation cases). Warnings and notes may be included; only
    errors count."""

    accepted: bool = True
    diagnostics: list[Any] = field(default_factory=list)
    printed: str | None = None  # the program printed back, when the implementation prints

    def reported(self) -> list[Reported]:
        """Every diagnostic, in one shape."""
        return coerce_all(self.diagnostics)

    def errors(self) -> list[Reported]:
        return errors(self.diagnostics)


@runtime_checkable
class Adapter(Protocol):
    """The Python interface a vendor implements (see docs/guides/conformance.md)."""

    name: str

    def check(self, source: str, filename: str) -> CheckResult:
        """Parse and verify `source`; report acceptance and the errors found, with their lines."""
        ...

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        """Run `function` of `source` on `inputs` (arrays by argument name, or scalars) and
        return the final contents of the array arguments, by name."""
        ...


class ReferenceAdapter:
    """The reference verifier and interpreter of this repository, in process."""

    name = "reference"

    def check(self, source: str, filename: str) -> CheckResult:
        from ktir.syntax.printer import print_module
        from ktir.verify import validate_text

        module, diagnostics = validate_text(source, filename)
        reported = [Reported(id=d.id, line=d.line, column=d.column, severity=d.severity, message=d.message)
                    for d in diagnostics]
        printed = print_module(module) if module is not None else None
        return CheckResult(accepted=not any(d.severity == "error" for d in diagnostics), diagnostics=reported, printed=printed)

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        import reference_interp
        from ktir.syntax.parser import parse

        module = parse(source, filename)
        result = reference_interp.run(module, function, args=dict(inputs))
        return {k: np.asarray(v) for k, v in result.outputs.items()}


@dataclass
class CommandAdapter:
    """An external program run once per case (the subprocess contract).

    The template's placeholders `{ktir}`, `{inputs}`, `{outputs}`, `{function}` and `{mode}`
    are replaced by (quoted) paths and names. Environment: KTIR_CONFORMANCE_MODE is `check`
    or `run`, KTIR_CONFORMANCE_FUNCTION the function to run (empty for the only one).
    Exit status: 0 accepted / ran (outputs written), 1 rejected (diagnostics on stdout or
    stderr, as `FILE:LINE:COL: error[ID]: message` lines or JSON objects with an `id` and a
    `line`: conformance.reported), 77 not supported, anything else an error.
    KTIR_CONFORMANCE_PROTOCOL_VERSION gives the protocol version the runner speaks (2: lines wanted).
    """

    template: str
    timeout: float | None = None
    name: str = "command"

    def _call(self, mode: str, source: str, function: str | None, inputs: Mapping[str, Any]) -> tuple[int, str, Path]:
        tmp = Path(tempfile.mkdtemp(prefix="ktir-conf-"))
        ktir_path, in_path, out_path = tmp / "case.ktir", tmp / "inputs.npz", tmp / "outputs.npz"
        ktir_path.write_text(source, encoding="utf-8")
        write_npz(in_path, {k: np.asarray(v) for k, v in inputs.items()})
        command = self.template.format(
            ktir=shlex.quote(str(ktir_path)), inputs=shlex.quote(str(in_path)), outputs=shlex.quote(str(out_path)),
            function=shlex.quote(function or ""), mode=mode,
        )
        env = dict(os.environ, KTIR_CONFORMANCE_MODE=mode, KTIR_CONFORMANCE_FUNCTION=function or "",
                   KTIR_CONFORMANCE_PROTOCOL_VERSION=str(PROTOCOL))
        # its own session, so that a timeout kills the whole pipeline the shell started
        proc = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise TimeoutError(f"command did not finish in {self.timeout} s") from None
        except BaseException:  # the runner's own timeout, or ^C
            _kill(proc)
            raise
        return proc.returncode, out + "\n" + err, tmp

    def _status(self, code: int, text: str) -> None:
        if code == EXIT_NOT_SUPPORTED:
            raise NotSupported(_tail(text) or "the command exited 77 (not supported)")
        if code not in (EXIT_OK, EXIT_REJECTED):
            raise AdapterError(f"the command exited {code}: {_tail(text)}")

    def check(self, source: str, filename: str) -> CheckResult:
        code, text, tmp = self._call("check", source, None, {})
        _cleanup(tmp)
        self._status(code, text)
        return CheckResult(accepted=code == EXIT_OK, diagnostics=from_text(text) if code == EXIT_REJECTED else [])

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        code, text, tmp = self._call("run", source, function, inputs)
        try:
            self._status(code, text)
            if code == EXIT_REJECTED:
                raise AdapterError(f"the command rejected a valid program: {_tail(text)}")
            out = tmp / "outputs.npz"
            if not out.exists():
                raise AdapterError("the command exited 0 but wrote no outputs file")
            try:
                return read_npz(out)
            except (OSError, ValueError) as e:
                raise AdapterError(f"cannot read the outputs file: {e}") from None
        finally:
            _cleanup(tmp)


@dataclass
class PersistentCommandAdapter:
    """An external program started once (per worker process) that serves many cases: the
    persistent protocol of docs/guides/conformance.md.

    The runner writes one JSON request per line to the program's stdin,
    `{"id", "protocol", "mode", "ktir", "inputs", "outputs", "function"}` (paths of the same
    files as the per-case contract), and reads one JSON response per line from its stdout,
    `{"id", "status", "diagnostics", "message"}` with `status` 0, 1 or 77 as the per-case exit
    statuses and `diagnostics` objects `{"id", "line", "column", "severity"}` (protocol 2) or
    bare IDs (protocol 1); schema/adapter.schema.json. The program exits when its stdin
    closes. A program that dies or times out is restarted for the next case.
    """

    command: str
    timeout: float | None = None
    name: str = "command (persistent)"
    _proc: subprocess.Popen[str] | None = field(default=None, repr=False)
    _tmp: Path | None = field(default=None, repr=False)
    _log: Any = field(default=None, repr=False)
    _next: int = 0

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="ktir-conf-serve-"))
        if self._log is None:
            self._log = open(self._tmp / "stderr.log", "w+", encoding="utf-8")  # noqa: SIM115 - lives as long as the adapter
        env = dict(os.environ, KTIR_CONFORMANCE_PROTOCOL="persistent", KTIR_CONFORMANCE_PROTOCOL_VERSION=str(PROTOCOL))
        self._proc = subprocess.Popen(self.command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._log, text=True, env=env, start_new_session=True, bufsize=1)
        return self._proc

    def _stderr_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        text = self._log.read()
        self._log.seek(0, os.SEEK_END)
        return _tail(text)

    def _request(self, mode: str, source: str, function: str | None, inputs: Mapping[str, Any]) -> dict[str, Any]:
        import selectors
        import time

        proc = self._start()
        assert self._tmp is not None and proc.stdin is not None and proc.stdout is not None
        ktir_path, in_path, out_path = self._tmp / "case.ktir", self._tmp / "inputs.npz", self._tmp / "outputs.npz"
        ktir_path.write_text(source, encoding="utf-8")
        out_path.unlink(missing_ok=True)
        if mode == "run":
            write_npz(in_path, {k: np.asarray(v) for k, v in inputs.items()})
        self._next += 1
        request = {"id": self._next, "protocol": PROTOCOL, "mode": mode, "ktir": str(ktir_path), "inputs": str(in_path) if mode == "run" else None,
                   "outputs": str(out_path) if mode == "run" else None, "function": function}
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                while True:
                    wait = None if deadline is None else deadline - time.monotonic()
                    if wait is not None and wait <= 0:
                        self.close(kill=True)
                        raise TimeoutError(f"command did not answer in {self.timeout} s")
                    if sel.select(wait):
                        break
            line = proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        except BaseException:  # the runner's own timeout, or ^C: the server is mid-request
            self.close(kill=True)
            raise
        if not line:
            tail = self._stderr_tail()
            self.close()
            raise AdapterError(f"the command exited without answering{': ' + tail if tail else ''}")
        try:
            response = json.loads(line)
        except json.JSONDecodeError:
            self.close()
            raise AdapterError(f"the command answered with something that is not JSON: {line.strip()[:200]}") from None
        if not isinstance(response, dict) or response.get("id") != self._next:
            self.close()
            raise AdapterError(f"the command answered request {self._next} with {line.strip()[:200]}")
        return response

    def _status(self, response: dict[str, Any]) -> int:
        code = response.get("status")
        message = str(response.get("message") or "")
        if code == EXIT_NOT_SUPPORTED:
            raise NotSupported(message or "not supported")
        if code not in (EXIT_OK, EXIT_REJECTED):
            raise AdapterError(f"the command reported status {code}: {message or self._stderr_tail()}")
        return int(code)

    def check(self, source: str, filename: str) -> CheckResult:
        response = self._request("check", source, None, {})
        code = self._status(response)
        listed = response.get("diagnostics") or []
        found = coerce_all(listed if isinstance(listed, list) else [])
        return CheckResult(accepted=code == EXIT_OK, diagnostics=found if code == EXIT_REJECTED else [])

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        response = self._request("run", source, function, inputs)
        code = self._status(response)
        if code == EXIT_REJECTED:
            raise AdapterError(f"the command rejected a valid program: {response.get('message') or ''}")
        assert self._tmp is not None
        out = self._tmp / "outputs.npz"
        if not out.exists():
            raise AdapterError("the command answered 0 but wrote no outputs file")
        try:
            return read_npz(out)
        except (OSError, ValueError) as e:
            raise AdapterError(f"cannot read the outputs file: {e}") from None

    def close(self, kill: bool = False) -> None:
        """Stop the program (it is restarted on the next case): close its stdin and give it
        a moment to exit, or with `kill` (it hangs) kill its process group at once."""
        import contextlib
        import signal

        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        if proc.poll() is None and not kill:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _kill(proc: subprocess.Popen[str]) -> None:
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def _cleanup(tmp: Path) -> None:
    for p in tmp.iterdir():
        p.unlink(missing_ok=True)
    tmp.rmdir()


PROTOCOLS = ("per-case", "persistent")


def load_adapter(spec: str, command: str | None = None, timeout: float | None = None, protocol: str = "per-case") -> Any:
    """The adapter named by `spec` (`reference` or `python:pkg.mod:Class`), or a command
    adapter for `command` speaking `protocol`. Raises AdapterError with a one-line reason."""
    if command is not None:
        if protocol == "persistent":
            return PersistentCommandAdapter(command, timeout=timeout)
        return CommandAdapter(command, timeout=timeout)
    if spec == "reference":
        return ReferenceAdapter()
    if not spec.startswith("python:") or spec.count(":") != 2:
        raise AdapterError(f"unknown adapter {spec!r}: use `reference` or `python:pkg.mod:Class`")
    _, module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise AdapterError(f"cannot import {module_name}: {e}") from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise AdapterError(f"{module_name} has no class or factory {attr}")
    try:
        adapter = factory()
    except Exception as e:  # noqa: BLE001 - a vendor's constructor failing is a usage problem, reported in one line
        raise AdapterError(f"{spec}: constructing the adapter failed: {type(e).__name__}: {e}") from None
    if not isinstance(adapter, Adapter):
        raise AdapterError(f"{spec} does not implement the adapter interface (name, check, run)")
    return adapter
