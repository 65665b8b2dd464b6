"""What a long command is doing, on stderr: a spinner, the step's name and the elapsed time.

Drawn only when stderr is a terminal (pipes, logs and CI output stay clean) and erased when
the work ends, so it never mixes with the command's results. `ktir lower torch`, `ktir run`
and `ktir run-program` use it; `ktir validate`/`fmt` over many files and `ktir conformance
run` draw their own bars (with a count) through rich as well.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def working(what: str, total: int | None = None) -> Iterator[Callable[..., None]]:
    """Show `what` with the elapsed time while the block runs; yields `step(description=None,
    advance=0)` to rename the step or advance a count out of `total`."""
    if not sys.stderr.isatty():
        yield lambda description=None, advance=0: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column

    # the elapsed time first: a description too long for the terminal is cut, never the time
    columns: list[Any] = [SpinnerColumn(), TimeElapsedColumn()]
    if total is not None:
        columns += [BarColumn(bar_width=20), MofNCompleteColumn()]
    console = Console(file=sys.stderr)
    room = max(console.width - (40 if total is not None else 12), 10)
    columns.append(TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", max_width=room)))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(what, total=total)

        def step(description: str | None = None, advance: int = 0) -> None:
            if description is not None:
                bar.update(task, description=description)
            if advance:
                bar.update(task, advance=advance)

        yield step
