"""``docsbot status``: each indexed version with its pages, chunks and vectors, its vector search, its schedule and
its last runs."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from docsbot.cli.common import docs_index
from docsbot.display import printable

if TYPE_CHECKING:
    import argparse

    from docsbot.service import RunInfo

__all__ = ["cmd_status"]


def _run_line(run: RunInfo) -> str:
    c = run.counts
    when = f"{datetime.fromisoformat(run.started_at):%Y-%m-%d %H:%M} {run.mode:<7}" if run.started_at else run.mode
    if run.state == "running":
        return f"{when}: running"
    if run.state == "interrupted":
        return f"{when}: interrupted (the process ended before the run recorded its end; pages it stored stay stored)"
    took = f"{run.elapsed_seconds:.1f}" if run.elapsed_seconds is not None else "?"
    line = (
        f"{when}: {c.get('unchanged', 0)} unchanged, {c.get('modified', 0)} modified"
        + (f" ({c['reextracted']} re-extracted from stored HTML)" if c.get("reextracted") else "")
        + f", {c.get('new', 0)} new, "
        f"{c.get('deleted', 0)} deleted, {c.get('failed', 0)} failed, "
        + (
            "skipped by the site's rules (" + ", ".join(f"{k} {n}" for k, n in run.skipped.items()) + "), "
            if run.skipped
            else ""
        )
        + f"{c.get('chunks_embedded', 0)} chunks embedded in {took} s: {run.outcome}"
    )
    return line + (f" ({run.outcome_reason})" if run.outcome_reason and run.outcome != "complete" else "")


_VECTOR_INDEX = {
    "hnsw": "its own HNSW graph ({mb:.1f} MB)",
    "building": "exact scan while its HNSW graph is built",
    "exact": "exact scan (no HNSW graph yet: built once its vectors are in, by the crawl or `docsbot embed` that "
    "gives them, or `docsbot db migrate`)",
    "none": "none",
}


def cmd_status(args: argparse.Namespace) -> int:
    from docsbot import store
    from docsbot.embedding.migration import describe_switch
    from docsbot.embedding.worker import describe_progress

    try:
        with docs_index() as index:
            versions = index.libraries(runs=3).libraries
    except store.NoSchema:
        versions = []
    if not versions:
        print("nothing indexed yet; index a site with `scrapy crawl docs -a url=URL`")
        return 1
    for v in versions:
        label = printable(store.version_label(v.library, v.version))  # a name stored before names were checked
        print(f"{label}  {printable(v.root_url)}" + ("  (a run is in progress)" if v.refreshing else ""))
        if v.scope:
            print(f"  scope: {printable(v.scope)}")
        defined = f" + {v.definitions} definitions" if v.definitions else ""
        print(f"  {v.pages} pages, {v.chunks} chunks{defined}, {v.vectors} with a vector, model {v.embedding_model}")
        if v.embedding_model:
            print(f"  vector search: {_VECTOR_INDEX[v.vector_index].format(mb=v.vector_index_bytes / 1e6)}")
        if v.vectors_waiting or v.embedding:
            work = v.embedding
            rate = work["rate"] if work else None
            who = (
                f" ({work['workers']} worker{'s' if work['workers'] != 1 else ''} embedding)"
                if work
                else (" (no worker is embedding: `docsbot embed` gives them their vectors)")
            )
            print(f"  vectors: {describe_progress(v.vectors, v.vectors_waiting, rate)}{who}")
        if v.model_switch:
            print(f"  {printable(describe_switch(v.model_switch))}; searches read {v.embedding_model}'s until it ends")
        if v.refresh_interval or v.next_due:
            every = (
                f"refreshed every {v.refresh_interval}" if v.refresh_interval else "indexed, not refreshed on schedule"
            )
            due = f", next due {v.next_due}" if v.next_due else ""
            failing = f"; {v.failures} runs in a row did not complete: {v.last_error}" if v.failures else ""
            print(f"  {every}{due}{printable(failing)}")
        for run in [v.last_run, *v.recent_runs] if v.last_run else []:
            print(f"  {_run_line(run)}")
    return 0
