"""What ``docsbot --help`` and each command's ``--help`` say in plain words, and one example per command.

The parser (:func:`docsbot.cli.build_parser`) takes its description from :data:`DESCRIPTION` and each command's
epilog from :data:`EXAMPLES`; scripts/docs_reference.py builds the docs site's CLI reference from the same parser, so
the terminal and the site show the same words.
"""

from __future__ import annotations

__all__ = ["DESCRIPTION", "EXAMPLES", "epilog"]

DESCRIPTION = (
    "Index and refresh documentation sites, search the index, show its status, and give waiting chunks their "
    "vectors. The index and refresh commands run the Scrapy crawl (scrapy crawl docs) with docsbot's settings, from "
    "any folder. Read-only commands (search, status, docs) never write to the database. Exit codes: 0 success, 1 "
    "nothing found or work left undone, 2 a usage or configuration error, 3 a sync or scheduler run that failed; "
    "index and refresh exit with the crawl's own codes. Run docsbot COMMAND --help for a command's options and an "
    "example."
)

# One line a user can paste, per command (the key is the command as typed after ``docsbot``)
EXAMPLES: dict[str, str] = {
    "index": "docsbot index https://docs.python.org/3/ --library python --version 3.13",
    "refresh": "docsbot refresh python@3.13",
    "search": 'docsbot search "asyncio gather timeout" --library python -k 3',
    "status": "docsbot status",
    "embed": "docsbot embed --library python --follow",
    "reembed": "docsbot reembed python@3.13 --model ~/.local/share/docsbot/models/all-MiniLM-L6-v2-int8",
    "delete": "docsbot delete --library python --version 3.12",
    "db": "docsbot db migrate",
    "db stop": "docsbot db stop",
    "db migrate": "docsbot db migrate",
    "mcp": "docsbot mcp --http 127.0.0.1:8000",
    "changes": "docsbot changes python@3.13 --since 7d --diff",
    "diff": "docsbot diff django 4.2 5.0",
    "add": "docsbot add 'flask>=2' --file libraries.toml",
    "docs": "docsbot docs fastapi dependencies --max-tokens 3000",
    "export": "docsbot export python@3.13 --format pages -o python-docs/",
    "sync": "docsbot sync libraries.toml --jobs 2",
    "scheduler": "docsbot scheduler --interval 60",
    "serve": "docsbot serve --http 127.0.0.1:8765",
}


def epilog(command: str) -> str:
    """The epilog of ``command``'s help: ``"example:\\n  docsbot ..."``; KeyError for a command without one."""
    return f"example:\n  {EXAMPLES[command]}"
