"""``docsbot mcp`` and ``docsbot serve``: the MCP server alone, or the web pages with the MCP server at ``/mcp``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

__all__ = ["cmd_mcp", "cmd_serve"]


def cmd_mcp(args: argparse.Namespace) -> int:
    from docsbot.mcp.transport import UsageError, serve  # the MCP SDK is imported only by this command

    try:
        return serve(http=args.http, allow_refresh=args.allow_refresh, allowed_networks=_allowed_networks(args))
    except UsageError as exc:
        print(f"docsbot mcp: {exc}", file=sys.stderr)
        return 2


def cmd_serve(args: argparse.Namespace) -> int:
    from docsbot.mcp.transport import UsageError, serve  # the MCP SDK, Starlette and Jinja2 only for this command
    from docsbot.web import build_app

    try:
        return serve(
            http=args.http, allow_refresh=args.allow_writes, pages=build_app, allowed_networks=_allowed_networks(args)
        )
    except UsageError as exc:
        print(f"docsbot serve: {exc}", file=sys.stderr)
        return 2


def _allowed_networks(args: argparse.Namespace) -> list[str]:
    """``--allow-network`` values, and ``*`` for ``--allow-private-networks``."""
    return [*(args.allow_network or []), *(["*"] if args.allow_private_networks else [])]
