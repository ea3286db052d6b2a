"""How long work shows progress: a tqdm bar, periodic log lines, or nothing.

The mode (:func:`progress_mode`):

- ``bar``: a tqdm bar (``tqdm.auto``: a widget in Jupyter), when stderr is a terminal or
  the code runs in a Jupyter kernel;
- ``log``: one line on stderr every :data:`LOG_EVERY_S` seconds or 10 % of the work, and at
  the end, when stderr is not a terminal (``nohup``, SLURM, CI logs, ``make figures``);
- ``off``: nothing.

``$DPDL_PROGRESS`` chooses: ``0``/``false``/``no`` (off: tests and CI), ``log``, ``bar``;
``1``/``true``/``yes``/``on``/``auto``, or none, leave it to where stderr goes; any other value
does too, with a warning naming the values it takes.
"""
from __future__ import annotations

import os
import sys
import time

__all__ = ["LOG_EVERY_S", "PROGRESS_ENV", "Progress", "format_seconds", "note", "progress_enabled", "progress_mode"]

PROGRESS_ENV = "DPDL_PROGRESS"
# A log line at most this often (and at every tenth of the work): enough to see a job is
# alive in a batch log without flooding it.
LOG_EVERY_S = 30.0
_OFF = ("0", "false", "no", "off", "")
_AUTO = ("1", "true", "yes", "on", "auto")


def _in_jupyter() -> bool:
    """Whether this process is a Jupyter kernel (an IPython kernel app is running)."""
    app = sys.modules.get("ipykernel.kernelapp")
    return app is not None and getattr(app.IPKernelApp, "initialized", lambda: False)()


def progress_mode(progress: bool | None = None) -> str:
    """``"bar"``, ``"log"`` or ``"off"``: ``progress=False`` is off, else ``$DPDL_PROGRESS``
    (see the module docstring), else a bar on a terminal or in Jupyter and log lines elsewhere."""
    if progress is False:
        return "off"
    env = os.environ.get(PROGRESS_ENV)
    if env is not None and progress is None:
        value = env.strip().lower()
        if value in _OFF:
            return "off"
        if value in ("log", "bar"):
            return value
        if value not in _AUTO:
            import warnings

            # A warning, not an error: progress is cosmetic, and a typo must not stop a long run.
            warnings.warn(f"${PROGRESS_ENV}={env!r} is not a progress mode; allowed values: 0/off, log, bar, "
                          "1/auto (the default: a bar on a terminal, else log lines)", stacklevel=2)
    return "bar" if sys.stderr.isatty() or _in_jupyter() else "log"


def progress_enabled(progress: bool | None = None) -> bool:
    """Whether to draw a tqdm bar (:func:`progress_mode` is ``"bar"``)."""
    return progress_mode(progress) == "bar"


def format_seconds(seconds: float) -> str:
    """``42s``, ``3m05s`` or ``2h07m``."""
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def note(message: str, progress: bool | None = None) -> None:
    """Print one line on stderr unless progress is off (a resumed run saying where it resumed)."""
    if progress_mode(progress) != "off":
        print(message, file=sys.stderr, flush=True)


class Progress:
    """Progress over ``total`` steps, shown as :func:`progress_mode` says.

    Parameters
    ----------
    total : number of steps
    desc : what progresses, e.g. ``run 1a2b3c4d``
    unit : the step's name in log lines and on the bar, e.g. ``round``
    initial : steps already done (a resumed run); the ETA counts only the steps made here
    progress : see :func:`progress_mode`

    Log lines read ``run 1a2b3c4d round 40/100, loss 0.412, elapsed 1m05s, ETA 1m38s``.
    """

    def __init__(self, total: int, desc: str, unit: str, *, initial: int = 0, progress: bool | None = None):
        self.total, self.desc, self.unit, self.done = total, desc, unit, initial
        self.mode = progress_mode(progress)
        self._first, self._t0 = initial, time.perf_counter()
        self._marks = [(self._t0, initial)]  # (time, steps done), about one a second: the recent rate
        self._last_line, self._last_tenth = self._t0, self._tenth(initial)
        self._postfix: dict = {}
        self._bar = None
        if self.mode == "bar":
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=initial, desc=desc, unit=unit)

    def _tenth(self, k: int) -> int:
        return 10 * k // max(1, self.total)

    def line(self) -> str:
        """The current state as one log line."""
        elapsed = time.perf_counter() - self._t0
        made = self.done - self._first
        parts = [f"{self.desc} {self.unit} {self.done}/{self.total}"]
        parts += [f"{k} {v}" for k, v in self._postfix.items()]
        parts.append(f"elapsed {format_seconds(elapsed)}")
        if made and self.done < self.total:
            parts.append(f"ETA {format_seconds(self.seconds_per_step() * (self.total - self.done))}")
        return ", ".join(parts)

    def seconds_per_step(self) -> float:
        """The pace of the latest half of the elapsed time: a run's early steps can cost
        more than its later ones (LEASGD tests at every new best validation accuracy, frequent
        early on) and the machine's load changes, so the whole run's mean pace misleads."""
        now = time.perf_counter()
        start = now - (now - self._t0) / 2
        t, done = next(((t, d) for t, d in self._marks if t >= start and d < self.done), self._marks[0])
        return (now - t) / max(1, self.done - done)

    def update(self, n: int = 1, **postfix) -> None:
        """``n`` more steps done; ``postfix`` (e.g. ``loss="0.412"``) shown beside the count."""
        self.done += n
        self._postfix = postfix or self._postfix
        if self.mode == "log" and time.perf_counter() - self._marks[-1][0] >= 1.0:
            self._marks.append((time.perf_counter(), self.done))
        if self._bar is not None:
            self._bar.update(n)
            if postfix:
                self._bar.set_postfix(postfix)
        elif self.mode == "log":
            now, tenth = time.perf_counter(), self._tenth(self.done)
            if self.done < self.total and (now - self._last_line >= LOG_EVERY_S or tenth > self._last_tenth):
                self._last_line, self._last_tenth = now, tenth
                print(self.line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        """Close the bar, or print the final log line."""
        if self._bar is not None:
            self._bar.close()
        elif self.mode == "log":
            print(self.line(), file=sys.stderr, flush=True)
