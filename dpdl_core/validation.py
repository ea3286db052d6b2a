"""Field checks shared by every options dataclass: errors name the field and what is allowed."""
from __future__ import annotations

__all__ = ["check_choice", "check_int"]


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
