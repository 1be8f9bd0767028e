"""The documentation site's reference pages, generated from the code at build time (an MkDocs hook: ``mkdocs.yml``
names this file under ``hooks``; ``make docs`` builds the site in strict mode).

- ``reference/cli.md``: every ``docsbot`` command and option, from :func:`docsbot.cli.build_parser` (argparse);
- ``reference/spider-arguments.md``: ``scrapy crawl docs -a NAME=VALUE``, from
  :class:`docsbot.arguments.CrawlArguments`;
- ``reference/settings.md``: every field of :class:`docsbot.config.DocsbotSettings` (its environment variable,
  type, default and description) and every Scrapy setting ``docsbot/settings.py`` sets (with the comment above
  it), defaults as the module has them when imported without docsbot's variables (paths inside the checkout
  relative to it); then the variables read outside the settings module (:data:`OTHER_ENVIRONMENT`), Scrapy's
  settings docsbot reads (:data:`SCRAPY_SETTINGS_READ`) and what the add-on adds;
- ``reference/mcp-tools.md``: every MCP tool the server lists with writes allowed, its description, annotations,
  arguments and output fields, and both JSON schemas, from :func:`docsbot.mcp.server.build_server`;
- ``reference/exit-codes.md``: ``scrapy crawl docs``'s exit codes and the kinds of failed and skipped pages, from
  :mod:`docsbot.refresh`.

``tests/test_docs_site.py`` checks that these pages name every option, setting, variable and tool the code has.
"""

from __future__ import annotations

import argparse
import ast
import functools
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ROOT / "docsbot" / "settings.py"

# Environment variables docsbot reads outside docsbot/settings.py, with what they do.
OTHER_ENVIRONMENT = {
    "SCRAPYD_URL": "a Scrapyd node (`http://[user:password@]host:port/`) that the refreshes and indexes the MCP "
    "server and `docsbot serve` start are scheduled on, instead of a child process; `scrapyd-deploy remote` "
    "deploys to it",
    "OPENAI_API_KEY": "the API key sent to `DOCSBOT_EMBEDDING_URL` when `DOCSBOT_EMBEDDING_API_KEY` is unset",
    "HF_HUB_OFFLINE": "set to 1 by docsbot itself before fastembed loads a model: no model hub is ever contacted",
}

# Scrapy's own settings that docsbot reads (or changes for one run) without setting a default of its own.
SCRAPY_SETTINGS_READ = {
    "DOWNLOAD_HANDLERS": "a run that renders (`-a render=js`, `DOCSBOT_RENDER_URLS`) gets scrapy-playwright's "
    "handler for http and https; every other run keeps Scrapy's plain HTTP handler",
    "RETRY_EXCEPTIONS": "the exceptions Scrapy retries: docsbot's retry middleware (which honours `Retry-After`) "
    "retries the same ones",
    "HTTPERROR_ALLOWED_CODES": "the add-on adds `DOCSBOT_GONE_STATUSES` to it, so that those answers reach the spider",
    "LOG_FILE": "Scrapy's log file (`--logfile`): with one, a crawl draws no progress bars (`DOCSBOT_PROGRESS=auto`)",
    "PLAYWRIGHT_LAUNCH_OPTIONS": "how scrapy-playwright starts the browser: unless a project sets its own, the add-on "
    "makes it of `DOCSBOT_CHROMIUM` and `DOCSBOT_CHROMIUM_USER` (as root, through `docsbot/bin/chromium-unprivileged`)",
}


def _cell(text: Any) -> str:
    """Text for a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


# --- the command line ---------------------------------------------------------------------------------------------


def _option_row(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{name}`" for name in action.option_strings)
        if action.nargs != 0:
            names += f" `{action.metavar or action.dest.upper()}`"
    else:
        names = f"`{action.metavar or action.dest}`"
    default = action.default
    shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        shown += (" " if shown else "") + "one of " + ", ".join(f"`{c}`" for c in action.choices)
    help_text = (action.help or "") % {"default": default, "prog": ""} if action.help else ""
    return f"| {_cell(names)} | {_cell(shown)} | {_cell(help_text)} |"


def _command(parser: argparse.ArgumentParser, name: str, summary: str, level: int) -> list[str]:
    out = [f"{'#' * level} `{name}`", ""]
    if summary:
        out += [summary[0].upper() + summary[1:] + ".", ""]
    description = " ".join((parser.description or "").split())
    if description and description.rstrip(".").lower() != summary.rstrip(".").lower():
        out += [description, ""]
    out += ["```text", parser.format_usage().strip().replace("usage: ", ""), "```", ""]
    if parser.epilog and parser.epilog.startswith("example:"):
        out += ["Example:", "", "```shell", parser.epilog.removeprefix("example:").strip(), "```", ""]
    actions = [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    if actions:
        out += ["| argument | default | meaning |", "|---|---|---|"]
        out += [_option_row(action) for action in actions]
        out.append("")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for sub_name, sub_parser in action.choices.items():
                out += _command(sub_parser, f"{name} {sub_name}", helps.get(sub_name) or "", level + 1)
    return out


def cli_page() -> str:
    """``reference/cli.md``: each command, its usage, arguments, defaults and help, from argparse."""
    from docsbot.cli import build_parser

    parser = build_parser()
    out = [
        "# Command line",
        "",
        "Generated from `docsbot/cli`'s argparse parser (`docsbot COMMAND --help` prints the same).",
        "The crawl itself is Scrapy's: `scrapy crawl docs -a NAME=VALUE`",
        "(see [Spider arguments](spider-arguments.md)).",
        "",
        " ".join(parser.description.split()),
        "",
    ]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                out += _command(sub, f"docsbot {name}", helps.get(name) or "", 2)
    return "\n".join(out).rstrip() + "\n"


def cli_options() -> set[tuple[str, str]]:
    """``(command, argument)`` for every option string and positional argument of every command (``("docsbot
    search", "--library")``): what the reference must name in that command's section."""
    from docsbot.cli import build_parser

    found: set[tuple[str, str]] = set()

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{prefix} {name}")
            elif not isinstance(action, argparse._HelpAction):
                found.update((prefix, option) for option in action.option_strings or [action.metavar or action.dest])

    walk(build_parser(), "docsbot")
    return found


# --- spider arguments ---------------------------------------------------------------------------------------------


def spider_arguments_page() -> str:
    """``reference/spider-arguments.md``: a table of :class:`CrawlArguments`' fields (type, default, description)."""
    from docsbot.arguments import CrawlArguments

    kinds = {
        "str": "text", "int": "integer", "bool": "`1` or `0`", "datetime.timedelta": "duration",
        "tuple[str, ...]": "comma-separated list",
    }  # fmt: skip
    out = [
        "# Spider arguments",
        "",
        "`scrapy crawl docs -a NAME=VALUE`, generated from `docsbot/arguments.py` (`CrawlArguments`, a pydantic model "
        "like the settings' one), which validates them: a malformed one, or a name it does not know, stops the "
        "crawl before its first request, with one line naming it (and, for a typo, the nearest name) and exit code 2, "
        "a usage error; names starting with `_` are a job runner's (Scrapyd's `_job`) and pass. A fleet's libraries "
        "file, the MCP server's and the web pages' indexing requests are checked by the same model.",
        "",
        "| argument | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for name, field in CrawlArguments.model_fields.items():
        kind = re.sub(
            r"\s*\|\s*None",
            "",
            str(
                field.annotation
                if isinstance(field.annotation, str)
                else getattr(field.annotation, "__name__", field.annotation)
            ),
        )
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        choices = extra.get("choices")
        kind = ", ".join(f"`{c}`" for c in choices) if choices else kinds.get(kind, kind)
        default = extra.get("shown_default") or ("" if field.default in (None, "") else f"`{field.default!s}`")
        default = {"`False`": "`0`"}.get(default, default)
        out.append(f"| `{name}` | {_cell(kind)} | {_cell(default)} | {_cell(field.description or '')} |")
    return "\n".join(out) + "\n"


def spider_argument_names() -> set[str]:
    from docsbot.arguments import CrawlArguments

    return set(CrawlArguments.model_fields)


# --- settings -----------------------------------------------------------------------------------------------------


@functools.cache  # one interpreter for both tables of the page
def _defaults() -> dict[str, str]:
    """Every upper-case name of docsbot.settings as imported without docsbot's environment variables (repr), with
    the home directory written as ``~`` and paths inside the checkout relative to it."""
    code = (
        "import json, docsbot.settings as s\nprint(json.dumps({k: repr(v) for k, v in vars(s).items() if k.isupper()}))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "DATABASE_URL", "SCRAPY_"))}
    answer = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60
    )
    home, checkout = str(Path.home()), str(ROOT) + os.sep
    return {k: v.replace(checkout, "").replace(home, "~") for k, v in json.loads(answer.stdout).items()}


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    text = re.sub(r"typing\.|Annotated\[(.*), NoDecode\]", r"\1", text)
    return {"Codes": "list[int]"}.get(text, text).replace("Literal", "one of ").replace("'", "")


def model_rows() -> list[dict[str, str]]:
    """One row per field of :class:`docsbot.config.DocsbotSettings`, in declaration order: ``name`` (the Scrapy
    setting it feeds, or its own), ``env``, ``type``, ``default`` (as the settings module has it, imported without
    docsbot's variables), ``section`` (the field's group) and ``doc`` (its description)."""
    from docsbot.config import DocsbotSettings

    defaults = _defaults()
    rows = []
    for env, field in DocsbotSettings.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        name = DocsbotSettings.scrapy_name(env)
        rows.append({
            "name": name, "env": env, "type": _type_name(field.annotation), "default": defaults.get(name, ""),
            "section": str(extra.get("group", "")), "doc": field.description or "",
        })  # fmt: skip
    return rows


def module_rows() -> list[dict[str, str]]:
    """One row per Scrapy setting docsbot/settings.py assigns itself, in file order: ``name``, ``default``,
    ``section`` (the ``# --- X ---`` line above it) and ``doc`` (the comment block right above the assignment, and
    its trailing comment)."""
    source = SETTINGS.read_text(encoding="utf-8")
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    defaults = _defaults()
    rows = []
    sections = {number: re.sub(r"[-\s]+$", "", re.sub(r"^[-\s]+", "", text))
                for number, text in comments.items() if text.startswith("---")}  # fmt: skip
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if not name.isupper():
            continue
        section = next((sections[n] for n in sorted(sections, reverse=True) if n < node.lineno), "Project")
        above, number = [], node.lineno - 1
        while (
            number in comments and lines[number - 1].lstrip().startswith("#") and not comments[number].startswith("---")
        ):
            above.insert(0, comments[number])
            number -= 1
        trailing = [comments[n] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1) if n in comments
                    and not lines[n - 1].lstrip().startswith("#")]  # fmt: skip
        rows.append({"name": name, "default": defaults.get(name, ""), "section": section,
                     "doc": " ".join(above + trailing)})  # fmt: skip
    return rows


def settings_table() -> list[dict[str, str]]:
    """Every setting the reference lists: :func:`model_rows`, then :func:`module_rows` (``env`` and ``type`` "")."""
    return model_rows() + [{**row, "env": "", "type": ""} for row in module_rows()]


def _default(value: str) -> str:
    return f"`{value}`" if len(value) <= 80 else f"`{value[:77]}…`"


def settings_page() -> str:
    out = [
        "# Settings",
        "",
        "docsbot's settings are declared once, typed and described, in `docsbot.config.DocsbotSettings` "
        "(pydantic-settings), and read from the environment variable of their name when the settings module is "
        "imported: how Scrapyd and Zyte Scrapy Cloud pass secrets. Each can also be set by `-s NAME=VALUE` on "
        "`scrapy crawl` (`-d setting=NAME=VALUE` on Scrapyd, raw settings on Scrapy Cloud; under the Scrapy name "
        "where it feeds one), and the crawl-shaped ones by [spider arguments](spider-arguments.md). A malformed "
        "value stops `scrapy crawl` and the `docsbot` command before they touch anything, with one line naming "
        "it. Defaults are shown as Python values; `~` is the home directory. This page is generated from the "
        "model and from `docsbot/settings.py`; what docsbot changes of Scrapy's own settings, and how to add "
        "components of yours, is in [Scrapy settings and components](scrapy-settings.md).",
        "",
    ]
    rows = model_rows()
    for section in dict.fromkeys(row["section"] for row in rows):
        out += [f"## {section}", "", "| environment | type | default | meaning |", "|---|---|---|---|"]
        for row in rows:
            if row["section"] == section:
                fed = f" (Scrapy's `{row['name']}`)" if row["name"] != row["env"] else ""
                out.append(
                    f"| `{row['env']}`{fed} | {_cell(row['type'])} | {_cell(_default(row['default']))} "
                    f"| {_cell(row['doc'])} |"
                )
        out.append("")
    out += ["## Scrapy settings docsbot sets", "", "| setting | value | why |", "|---|---|---|"]
    out += [f"| `{row['name']}` | {_cell(_default(row['default']))} | {_cell(row['doc'])} |" for row in module_rows()]
    out += [
        "| `DOCSBOT_SETTINGS_ERRORS` | `[]` | One line per malformed environment variable, found when the settings "
        "module is imported (computed, not set): the crawl's add-on and the `docsbot` command stop on them. |",
        "",
        "## Read outside the settings module",
        "",
        "| environment | meaning |",
        "|---|---|",
    ]
    out += [f"| `{name}` | {_cell(text)} |" for name, text in OTHER_ENVIRONMENT.items()]
    out += ["", "## Scrapy's settings docsbot reads", "", "| setting | what docsbot does with it |", "|---|---|"]
    out += [f"| `{name}` | {_cell(text)} |" for name, text in SCRAPY_SETTINGS_READ.items()]
    out += addon_section()
    return "\n".join(out).rstrip() + "\n"


def addon_section() -> list[str]:
    """The add-on's components and settings (:mod:`docsbot.addon`), as it adds them."""
    from docsbot import addon

    out = [
        "",
        "## The add-on",
        "",
        "What `docsbot.addon.Docsbot` (`ADDONS`) adds before the crawler is built: each component beside a "
        "project's own, unless the project names it already (`None` switches one off; the required ones are "
        "checked). See [Scrapy settings and components](scrapy-settings.md).",
        "",
        "| setting | entry | priority | required |",
        "|---|---|---|---|",
    ]
    for name, components in addon.COMPONENTS.items():
        required = addon.REQUIRED_COMPONENTS.get(name, ())
        for component, priority in components.items():
            shown = "off (`None`)" if priority is None else str(priority)
            out.append(f"| `{name}` | `{component}` | {shown} | {'yes' if component in required else ''} |")
    for name, value in addon.SETTINGS.items():
        out.append(f"| `{name}` | `{value}` | add-on | |")
    out.append(
        f"| `DOWNLOAD_HANDLERS` | `http`, `https`: `{addon.DOWNLOAD_HANDLER}`; `file`: `{addon.FILE_DOWNLOAD_HANDLER}` "
        "| add-on | |"
    )
    return out


def names_read_by_code() -> set[str]:
    """Every environment variable and setting docsbot's code reads by a literal upper-case name
    (``os.environ.get("X")``, ``os.environ["X"]``, ``env.get("X")``, ``settings.getint("X")``, ``_env_number("X",
    …)``, a ``*_ENV = "X"`` constant)."""
    pattern = re.compile(
        r"""(?:environ\s*\[\s*|\.get(?:int|float|bool|list|dict)?\(\s*|_env_number\(\s*|getenv\(\s*|_ENV\s*=\s*)"""
        r"""["']([A-Z][A-Z0-9_]+)["']"""
    )
    names: set[str] = set()
    for path in [*(ROOT / "docsbot").rglob("*.py"), *(ROOT / "spiders").rglob("*.py")]:
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return names


# --- MCP tools ----------------------------------------------------------------------------------------------------


def mcp_tools() -> list[Any]:
    """The tools a server with writes allowed lists (``tools/list``), without a database: nothing is called."""
    import anyio

    from docsbot.mcp.server import build_server
    from docsbot.project_settings import ProjectSettings
    from docsbot.service import DocsIndex

    index = DocsIndex(ProjectSettings(), "postgresql://unused@127.0.0.1:1/unused", None, allow_writes=True, env={})
    server = build_server(index)
    return anyio.run(server.list_tools)


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " / ".join(f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    return str(schema.get("type", "any"))


def _limits(schema: dict[str, Any]) -> str:
    parts = []
    for alt in [schema, *schema.get("anyOf", [])]:
        for key, word in (("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"), ("maxLength", "length ≤")):
            if key in alt:
                parts.append(f"{word} {alt[key]}")
    return ", ".join(dict.fromkeys(parts))


def _fields(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    out = ["| name | type | default | meaning |", "|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        default = "required" if name in required else f"`{json.dumps(prop.get('default'))}`"
        kind = _type(prop) + (f" ({_limits(prop)})" if _limits(prop) else "")
        out.append(f"| `{name}` | {_cell(kind)} | {_cell(default)} | {_cell(prop.get('description', ''))} |")
    return out


def mcp_page() -> str:
    from docsbot.mcp.server import WRITE_TOOLS

    out = [
        "# MCP tools",
        "",
        "Generated from the server (`docsbot/mcp/server.py`: the tools a server started with `--allow-refresh` "
        "lists). Each answers JSON (`structuredContent`, matching its output schema, and the same JSON as text); a "
        "bad call is a tool error (`isError`) whose text says what to do. How to use them, with examples: "
        "[The MCP server](../guide/mcp.md).",
        "",
    ]
    for tool in mcp_tools():
        hints = tool.annotations
        kind = "writes; listed only with `--allow-refresh`" if tool.name in WRITE_TOOLS else "read-only"
        if hints is not None and hints.destructive_hint:
            kind += ", destructive"
        out += [f"## `{tool.name}`", "", f"*{kind}*", "", tool.description or "", ""]
        out += ["**Arguments**", ""] + (_fields(tool.input_schema) if tool.input_schema.get("properties") else
                                         ["none"])  # fmt: skip
        out.append("")
        output = tool.output_schema or {}
        if output.get("properties"):
            out += ["**Answer**", ""] + _fields(output) + [""]
        out += [
            '??? note "JSON schemas"',
            "",
            "    ```json",
            *("    " + line for line in json.dumps(
                {"inputSchema": tool.input_schema, "outputSchema": output}, indent=2).splitlines()),
            "    ```",
            "",
        ]  # fmt: skip
    return "\n".join(out).rstrip() + "\n"


# --- exit codes ---------------------------------------------------------------------------------------------------


def exit_codes_page() -> str:
    from docsbot import refresh

    source = (ROOT / "docsbot" / "refresh" / "outcome.py").read_text(encoding="utf-8")
    codes = re.findall(r"^EXIT_([A-Z_]+) = (\d+)\s+#\s*(.+)$", source, re.M)
    out = [
        "# Exit codes and run outcomes",
        "",
        "Generated from `docsbot/refresh/outcome.py`: one rule (`run_outcome`) decides a run's outcome, and the "
        "exit code of `scrapy crawl docs`, its summary line, `crawl_runs.outcome`, `docsbot status` and the MCP "
        "`get_run` all say it. What each means for your data, and what to do: "
        "[Crawling and searching](../guide/crawling.md).",
        "",
        "| exit code | outcome | when |",
        "|---:|---|---|",
    ]
    out += [f"| {code} | `{name.lower()}` | {_cell(text)} |" for name, code, text in codes]
    out += ["", "A fetched page that was not stored counts under `docsbot/failed/KIND` in the run's stats:", ""]
    out += ["| kind | what happened |", "|---|---|"]
    out += [f"| `{kind}` | {_cell(text)} |" for kind, text in refresh.FAILURE_KINDS.items()]
    out += [
        "",
        "Pages the site's rules keep from the crawler are skipped, never failed (the run stays complete): "
        + ", ".join(f"`docsbot/skipped/{kind}`" for kind in refresh.SKIPPED_KINDS)
        + ".",
        "",
        "`scrapy crawl docs` exits 2, before anything is fetched or written, on a spider argument it does not know "
        "or cannot read (a usage error, as Scrapy's own).",
        "",
        "`docsbot` commands exit 0 on success, 1 when nothing matched or something named was not found, and 2 on "
        "a usage or configuration error (a database schema older than this docsbot included: the one line names "
        "`docsbot db migrate`).",
    ]
    return "\n".join(out).rstrip() + "\n"


PAGES = {
    "reference/cli.md": cli_page,
    "reference/spider-arguments.md": spider_arguments_page,
    "reference/settings.md": settings_page,
    "reference/mcp-tools.md": mcp_page,
    "reference/exit-codes.md": exit_codes_page,
}


# --- the MkDocs hook ----------------------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site (MkDocs 1.6 ``File.generated``)."""
    from mkdocs.structure.files import File

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    for uri, render in PAGES.items():
        files.append(File.generated(config, uri, content=render()))
    return files


if __name__ == "__main__":  # print one page: python scripts/docs_reference.py reference/cli.md
    sys.path.insert(0, str(ROOT))
    print(PAGES[sys.argv[1]]())
