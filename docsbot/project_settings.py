"""The upper-case names of a Scrapy settings module read without Scrapy (:class:`ProjectSettings`): what the
search, web and MCP processes, which import no Scrapy, read docsbot's settings through."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ProjectSettings"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ProjectSettings:
    """Read-only upper-case names of a settings module (``docsbot.settings`` by default), with ``overrides``
    on top, behind Scrapy's ``BaseSettings`` getters: ``get``, ``getint``, ``getfloat``, ``getbool``, ``[]``.
    Conversion errors raise ``ValueError`` as Scrapy's do."""

    def __init__(self, module: str = "docsbot.settings", overrides: dict[str, Any] | None = None) -> None:
        values = vars(importlib.import_module(module))
        self._values = {name: value for name, value in values.items() if name.isupper()}
        self._values.update(overrides or {})

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def __getitem__(self, name: str) -> Any:
        return self._values.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def getint(self, name: str, default: int = 0) -> int:
        return int(self.get(name, default))

    def getfloat(self, name: str, default: float = 0.0) -> float:
        return float(self.get(name, default))

    def getbool(self, name: str, default: bool = False) -> bool:
        value = self.get(name, default)
        if isinstance(value, str):
            if value.lower() in _TRUE:
                return True
            if value.lower() in _FALSE:
                return False
            raise ValueError(f"{name}={value!r} is not a boolean")
        return bool(value)
