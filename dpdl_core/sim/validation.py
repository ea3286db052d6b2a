"""Field checks shared by every options dataclass and environment variable: errors name the
field (or variable) and what is allowed."""
from __future__ import annotations

import os

__all__ = ["check_choice", "check_int", "env_int"]


def check_choice(obj, name: str, allowed, error: type[Exception] = ValueError) -> None:
    """Raise ``error`` unless ``obj.<name>`` is one of ``allowed``."""
    value = getattr(obj, name)
    if value not in allowed:
        raise error(f"{name}={value!r} is not allowed; allowed values: {list(allowed)}")


def check_int(obj, name: str, minimum: int = 1, optional: bool = False, error: type[Exception] = ValueError) -> None:
    """Raise ``error`` unless ``obj.<name>`` is an integer >= ``minimum`` (or None when ``optional``)."""
    value = getattr(obj, name)
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise error(f"{name}={value!r} must be an integer >= {minimum}" + (" or null" if optional else ""))


def env_int(name: str, default: int, meaning: str, minimum: int = 1) -> int:
    """``$name`` as an integer >= ``minimum`` (``default`` when unset or empty).

    Raises
    ------
    ValueError
        Naming the variable, its value and ``meaning`` (what the number sets), so that a typo
        in the environment is not read as a default nor reported as a bare ``int()`` error.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ValueError(f"${name}={raw!r} must be a whole number of at least {minimum} ({meaning}); "
                         f"fix it or unset it")
    return value
