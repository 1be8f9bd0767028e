"""search(explain=True) against a real PostgreSQL: the explanation's ranks and knobs are the ones that produced the
score and the order (a knob set neutral through its setting changes both), and explaining changes no result."""

from __future__ import annotations

import math

import pytest

from docsbot import store
from tests import test_search_ranking as ranking
from tests.test_search_ranking import corpus, save, search

conn, version = ranking.conn, ranking.version  # the ranking tests' fixtures: a migrated database, a version

TERMS = {"w_vec": "vector_chunks", "w_def": "vector_definitions", "w_def_near": "vector_definitions",
         "w_lex": "bm25_chunks", "w_lex_ident": "bm25_chunks"}  # fmt: skip
FACTORS = {"nav_factor", "ident_miss"}


def recomputed(explanation, **tuning) -> float:
    """A chunk's fused score from its explanation alone: Σ knob / (rrf_k + rank in its list) × every factor."""
    params = {**store.SEARCH_DEFAULTS, **tuning}
    total = sum(
        f["value"] / (params["rrf_k"] + explanation["lists"][TERMS[f["knob"]]])
        for f in explanation["factors"]
        if f["knob"] in TERMS
    )
    return total * math.prod(f["value"] for f in explanation["factors"] if f["knob"] in FACTORS)


def test_explaining_changes_no_result_and_is_absent_unless_asked(conn, database_url, version):
    save(database_url, corpus(version))
    for per_page in (True, False):
        plain = search(conn, version, "inheritable set os", k=5, per_page=per_page)
        explained = search(conn, version, "inheritable set os", k=5, per_page=per_page, explain=True)
        assert [(h.url, h.score, h.content) for h in plain] == [(h.url, h.score, h.content) for h in explained]
        assert all(h.explanation is None for h in plain)
        assert all(h.explanation is not None for h in explained)


def test_a_chunks_explanation_gives_the_ranks_and_knobs_that_made_its_score(conn, database_url, version):
    save(database_url, corpus(version))
    hits = search(conn, version, "inheritable set os", k=50, per_page=False, explain=True)
    for hit in hits:
        assert hit.explanation["score"] == hit.score
        assert recomputed(hit.explanation) == pytest.approx(hit.score)
    index = next(h for h in hits if h.url == "http://h/genindex.html")
    assert {"knob": "nav_factor", "value": 0.1} in [
        {k: f[k] for k in ("knob", "value")} for f in index.explanation["factors"]
    ]
    # the navigation factor set neutral through its setting: gone from the explanation, the page climbs by it
    neutral = search(conn, version, "inheritable set os", k=50, per_page=False, explain=True, nav_factor=1.0)
    unfactored = next(h for h in neutral if h.url == "http://h/genindex.html")
    assert "nav_factor" not in [f["knob"] for f in unfactored.explanation["factors"]]
    assert unfactored.score == pytest.approx(index.score * 10)
    assert [h.url for h in neutral].index(unfactored.url) < [h.url for h in hits].index(index.url)
    assert recomputed(unfactored.explanation, nav_factor=1.0) == pytest.approx(unfactored.score)


def test_a_pages_explanation_gives_its_best_chunks_ranks_and_the_page_knobs(conn, database_url, version):
    save(database_url, corpus(version))
    pages = search(conn, version, "os.set_inheritable", k=4, per_page=True, explain=True)
    chunks = search(conn, version, "os.set_inheritable", k=50, per_page=False, explain=True)
    for hit in pages:
        mine = [c for c in chunks if c.page_id == hit.page_id]
        assert hit.explanation["best_chunk_score"] == pytest.approx(max(c.score for c in mine))
        for name in ("vector_chunks", "bm25_chunks"):  # the best rank any of its chunks has in that list
            ranks = [c.explanation["lists"][name] for c in mine if c.explanation["lists"][name] is not None]
            assert hit.explanation["lists"][name] == (min(ranks) if ranks else None)
    top = pages[0]
    assert top.url == "http://h/os.html"
    knobs = {f["knob"]: f for f in top.explanation["factors"]}
    assert knobs["w_sym"]["value"] == store.SEARCH_DEFAULTS["w_sym"] and top.explanation["lists"]["symbols"] == 1
    # the symbol bonus set neutral: no longer among the knobs, and the page's score loses exactly that bonus
    bonus = float(knobs["w_sym"]["effect"].split()[0])
    without = next(h for h in search(conn, version, "os.set_inheritable", k=4, per_page=True, explain=True, w_sym=0.0)
                   if h.url == top.url)  # fmt: skip
    assert "w_sym" not in [f["knob"] for f in without.explanation["factors"]]
    assert without.score == pytest.approx(top.score - bonus, abs=1e-4)
