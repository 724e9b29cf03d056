"""What a long fit shows while it samples: a bar redrawn in place on a terminal, a line every few seconds otherwise.

nutpie's own bar draws only on a terminal and says nothing in a log or CI, where a
fit of several minutes would otherwise be silent; this one does both from the same
figures: draws per chain so far, divergences so far, seconds taken and about how
many are left.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

LINE_EVERY = 10.0  # seconds between lines where the output is not a terminal
BAR_WIDTH = 24


def on_terminal(stream: TextIO) -> bool:
    """A bar only on an interactive terminal, never in CI or in a pipe."""
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("CI")


@dataclass
class Progress:
    """Reports a fit's progress to ``stream``: in place on a terminal, else one line every ``every`` seconds.

    ``update`` may be called as often as the fit likes; what it writes is throttled
    here. ``close`` ends a bar's line so that the next message starts on its own.
    """

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    terminal: bool | None = None  # None: ask the stream
    every: float = LINE_EVERY
    clock: Callable[[], float] = time.monotonic
    stage: str | None = None  # what is being sampled, where it is not the fit's own attempts (LOO's second model)
    _last: float | None = None
    _open_bar: bool = False

    def __post_init__(self) -> None:
        if self.terminal is None:
            self.terminal = on_terminal(self.stream)

    def say(self, text: str) -> None:
        """A message of its own (the estimate before sampling, an attempt's verdict): always written."""
        self.close()
        self.stream.write(text + "\n")
        self.stream.flush()

    def update(
        self,
        *,
        attempt: int,
        drawn: int,
        max_draws: int,
        divergences: int | None,
        elapsed: float,
        left: float | None,
        warming_up: bool = False,
        force: bool = False,
        reading: int | None = None,
    ) -> None:
        now = self.clock()
        if not force and self._last is not None and now - self._last < (1.0 if self.terminal else self.every):
            return
        self._last = now
        text = status_text(
            attempt=attempt,
            drawn=drawn,
            max_draws=max_draws,
            divergences=divergences,
            elapsed=elapsed,
            left=left,
            warming_up=warming_up,
            reading=reading,
            stage=self.stage,
        )
        if self.terminal:
            filled = 0 if warming_up or max_draws <= 0 else min(BAR_WIDTH, round(BAR_WIDTH * drawn / max_draws))
            self.stream.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {text}\033[K")
            self._open_bar = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open_bar:
            self.stream.write("\n")
            self.stream.flush()
            self._open_bar = False


def status_text(
    *,
    attempt: int,
    drawn: int,
    max_draws: int,
    divergences: int | None,
    elapsed: float,
    left: float | None,
    warming_up: bool = False,
    reading: int | None = None,
    stage: str | None = None,
) -> str:
    """One progress line, e.g. ``attempt 1: 400 of at most 2400 draws a chain, 0 divergences, 35 s, about 20 s left``.

    A run that stops when its gate passes cannot know its end: with ``reading`` (the draws a chain at
    which the gate is next read) the time is to that reading, and the line says so. With ``stage``
    the line names what is sampled instead of the attempt (the second model LOO compares with)."""
    what = "warming up" if warming_up else f"{drawn} of at most {max_draws} draws a chain"
    parts = [f"{stage or f'attempt {attempt}'}: {what}"]
    if divergences is not None and not warming_up:
        parts.append(f"{divergences} divergence{'s' if divergences != 1 else ''}")
    parts.append(f"{elapsed:.0f} s")
    if left is not None and reading is not None and not warming_up:
        parts.append(f"the gate read at {reading} draws in about {max(left, 0.0):.0f} s")
    elif left is not None:
        parts.append(f"about {max(left, 0.0):.0f} s left")
    return ", ".join(parts)
