"""Typed readers of the environment: the one place that parses a variable.

kbsite/settings.py declares every setting through these; code reads `django.conf.settings`. The few modules
that run before Django's settings can be imported (kbsite/gunicorn_conf.py, loaded by gunicorn's arbiter;
infra/runlock.py, run by `make run` before anything migrates) read their variables here too, so the parsing
rules have one owner: a value that does not parse fails loudly, naming the variable, and an empty value means
the default wherever a default exists.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """The variable as it is set (an empty value included); `default` when it is not set."""
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated list; empty items are dropped."""
    return [item for item in os.environ.get(name, default).split(",") if item]


def env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value) if value else default


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ValueError(f"{name} must be {' or '.join(choices)}, got {value!r}")
    return value


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate such as "600/min" ("" switches the limit off)."""
    value = os.environ.get(name, default).strip()
    if value and not re.fullmatch(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ValueError(f"{name} must be a rate such as 600/min or 10/s (or empty for no limit), got {value!r}")
    return value


def env_named(prefix: str, suffix: str) -> dict[str, str]:
    """Every variable named `<prefix><NAME><suffix>`, by NAME: its value stripped, empty ones left out.

    For settings named by the deployment per object (KB_COLLECTION_<NAME>_FOLDER): the names are not known
    in advance, so they are collected once, here, rather than looked up in the environment wherever used.
    """
    return {
        variable[len(prefix) : len(variable) - len(suffix)]: value.strip()
        for variable, value in os.environ.items()
        if variable.startswith(prefix)
        and variable.endswith(suffix)
        and len(variable) > len(prefix) + len(suffix)
        and value.strip()
    }


# --- variables read before Django's settings (declared in settings.py as well, through these) --------------------


def var_dir() -> Path:
    """KB_VAR_DIR: the embedded PostgreSQL, the secret key, run locks and static files (default var/)."""
    return env_path("KB_VAR_DIR", BASE_DIR / "var")


def port() -> str:
    """PORT: where gunicorn listens (with KB_BIND), and what `make run` prints."""
    return env_str("PORT", "8000")
