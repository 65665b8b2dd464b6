"""One command over many files: directories expanded, several processes, a progress bar.

Each file's output (stdout and stderr) is kept together and printed in the order the files
were given, whatever order the worker processes finish in, so a run with `-j 8` prints
what a run with `-j 1` prints.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

SOURCE_SUFFIXES = (".ktir", ".mlir")
PROGRESS_MIN_FILES = 8  # fewer files finish before a bar would be worth drawing

FileCommand = Callable[[str, Any], int]


def expand(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """(files, problems): each directory becomes its .ktir/.mlir files (recursively, sorted,
    hidden directories skipped); files and `-` stay as given. A directory holding no source
    file is a problem, reported by the caller as a usage error."""
    files: list[str] = []
    problems: list[str] = []
    for path in paths:
        if path == "-" or not os.path.isdir(path):
            files.append(path)
            continue
        found = sorted(
            str(p)
            for p in Path(path).rglob("*")
            if p.suffix in SOURCE_SUFFIXES
            and p.is_file()
            and not any(part.startswith(".") for part in p.relative_to(path).parts[:-1])
        )
        if not found:
            problems.append(f"{path}: no {' or '.join(SOURCE_SUFFIXES)} files in this directory")
        files.extend(found)
    return files, problems


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_many(command: FileCommand, files: Sequence[str], options: Any, jobs: int = 1, label: str = "") -> int:
    """Run `command(file, options)` on every file (in `jobs` processes when above 1) and
    return the worst exit code. A progress bar is drawn on stderr for long interactive runs."""
    worst = 0
    with _progress(len(files), label) as show:
        for code, out, err in _outcomes(command, files, options, jobs, capture=show is not None):
            if out:
                sys.stdout.write(out)
            if err:
                if show is not None:
                    show(err)
                else:
                    sys.stderr.write(err)
            worst = max(worst, code)
            if show is not None:
                show("")
    return worst


def _outcomes(
    command: FileCommand, files: Sequence[str], options: Any, jobs: int, capture: bool
) -> Iterator[tuple[int, str, str]]:
    jobs = min(jobs, len(files))
    if jobs <= 1:
        for path in files:
            # without a bar to draw around, printed as it goes
            yield _captured(command, path, options) if capture else (command(path, options), "", "")
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork where there is one: the workers start with everything this process imported
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    chunk = max(1, len(files) // (jobs * 8))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method)) as pool:
        try:
            yield from pool.map(_captured, repeat(command), files, repeat(options), chunksize=chunk)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _captured(command: FileCommand, path: str, options: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command(path, options)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _progress(total: int, label: str) -> Iterator[Callable[[str], None] | None]:
    """None, or a function that prints a file's diagnostics above the bar (and, given "",
    advances the bar by one file)."""
    if total < PROGRESS_MIN_FILES or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.text import Text

    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr),
        transient=True,  # the diagnostics stay, the bar goes when done
        redirect_stderr=False,
    )
    task = bar.add_task(label, total=total)

    def show(err: str) -> None:
        if err:
            bar.console.print(Text(err), end="", soft_wrap=True, markup=False, highlight=False)
        else:
            bar.advance(task)

    with bar:
        yield show
