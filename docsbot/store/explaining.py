"""Why a result ranks where it does: the explanation :func:`docsbot.store.ranking.search` gives with
``explain=True``, built from what the search statement computed for the result (no second query).

An explanation is a dict: ``lists`` (the result's 1-based rank in each candidate list the ranker fuses, ``None``
where it is not among that list's candidates; for a page, the best rank any of its chunks has), ``factors`` (every
knob of :data:`docsbot.store.ranking.SEARCH_DEFAULTS` that changed its score: ``knob``, its ``value`` and its
``effect``, a term added or a factor applied, in the order the statement applies them) and ``score``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LISTS", "chunk_explanation", "page_explanation"]

# The candidate lists the search fuses, by the names an explanation gives them
LISTS = ("vector_chunks", "vector_definitions", "bm25_chunks", "bm25_pages", "symbols")


def _term(knob: str, value: float, rank: int, rrf_k: float, list_name: str) -> dict[str, Any]:
    adds = value / (rrf_k + rank)
    return {"knob": knob, "value": value, "effect": f"+{adds:.4f} = {value:g}/(rrf_k {rrf_k:g} + {rank}), {list_name}"}


def _factor(knob: str, value: float, why: str) -> dict[str, Any]:
    return {"knob": knob, "value": value, "effect": f"×{value:g} ({why})"}


def _changed(factor: dict[str, Any]) -> bool:
    """Whether a knob changed the score: a term of weight 0 adds nothing, a factor of 1 multiplies by nothing."""
    return factor["value"] != (1 if factor["effect"].startswith("×") else 0)


def _chunk_factors(chunk: dict[str, Any], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The knobs of one chunk's fused score: its vector term, its BM25 term, the navigation and identifier factors
    (those that changed it)."""
    rrf_k = params["rrf_k"]
    factors = []
    if chunk.get("vec_rank") is not None:
        if chunk.get("vec_kind") == 0:
            factors.append(_term("w_vec", params["w_vec"], chunk["vec_rank"], rrf_k, "vector_chunks"))
        elif chunk.get("def_near"):
            term = _term("w_def_near", params["w_def_near"], chunk["vec_rank"], rrf_k, "vector_definitions")
            term["effect"] += f", nearer than every chunk by def_gap {params['def_gap']:g}"
            factors.append(term)
        else:
            factors.append(_term("w_def", params["w_def"], chunk["vec_rank"], rrf_k, "vector_definitions"))
    if chunk.get("lex_rank") is not None:
        knob = "w_lex_ident" if chunk.get("lex_ident") else "w_lex"
        factors.append(_term(knob, params[knob], chunk["lex_rank"], rrf_k, "bm25_chunks"))
    if chunk.get("nav"):
        factors.append(
            _factor("nav_factor", params["nav_factor"], f"a navigation page: links ≥ nav_share {params['nav_share']:g}")
        )
    if chunk.get("ident_missed"):
        factors.append(_factor("ident_miss", params["ident_miss"], "the page lacks every identifier of the query"))
    return [f for f in factors if _changed(f)]


def chunk_explanation(chunk: dict[str, Any], score: float, params: dict[str, Any]) -> dict[str, Any]:
    """The explanation of one chunk (``search(per_page=False)``): ``chunk`` is the statement's JSON for it."""
    vec_rank = chunk.get("vec_rank")
    lists = dict.fromkeys(LISTS)
    lists["vector_chunks" if chunk.get("vec_kind") == 0 else "vector_definitions"] = vec_rank
    lists["bm25_chunks"] = chunk.get("lex_rank")
    if vec_rank is None:
        lists["vector_chunks"] = lists["vector_definitions"] = None
    return {"score": score, "lists": lists, "factors": _chunk_factors(chunk, params)}


def page_explanation(page: dict[str, Any], merged: int, params: dict[str, Any]) -> dict[str, Any]:
    """The explanation of one page result (``search(per_page=True)``): ``page`` is the statement's JSON for it (its
    best chunk's ranks and factors, the rest's share, its symbol bonus, its page BM25 rank, the changelog factor),
    ``merged`` the number of its chunks the result shows."""
    found = page.get("lists") or {}
    lists = {name: found.get(name) for name in LISTS}  # in LISTS' order, whatever the JSON's
    lists["bm25_pages"] = page.get("plex_rank") if params["w_page_lex"] > 0 else None
    lists["symbols"] = page.get("sym_rank") if page.get("sym_bonus") is not None else None
    factors = [{**f, "part": "best chunk"} for f in _chunk_factors(page, params)]
    if page.get("rest"):
        rest = params["w_page_rest"] * page["rest"]
        factors.append(
            {
                "knob": "w_page_rest",
                "value": params["w_page_rest"],
                "effect": f"+{rest:.4f}: its 2nd and 3rd chunks' scores {page['rest']:.4f} × w_page_rest",
            }
        )
    if page.get("sym_bonus"):
        knob = "w_sym" if page.get("sym_ident") else "w_sym_word"
        how = f"{params[knob]:g}"
        factors.append(
            {
                "knob": knob,
                "value": params[knob],
                "effect": f"+{page['sym_bonus']:.4f} = {how} / "
                f"{page.get('sym_pages')} page(s) defining the query's name"
                + ("" if page.get("sym_exact") else " (by its last parts)")
                + (" where the site's index points" if page.get("sym_indexed") else ""),
            }
        )
    if lists["bm25_pages"] is not None:
        factors.append(_term("w_page_lex", params["w_page_lex"], lists["bm25_pages"], params["rrf_k"], "bm25_pages"))
    if page.get("nav") and (page.get("sym_bonus") or lists["bm25_pages"] is not None):
        factors.append(_factor("nav_factor", params["nav_factor"], "on the symbol and page BM25 terms too"))
    if page.get("changelog"):
        factors.append(
            _factor("changelog_factor", params["changelog_factor"], "release notes; the query asks about no change")
        )
    factors = [f for f in factors if f["knob"] == "merge" or _changed(f)]
    factors.append(
        {
            "knob": "merge",
            "value": params["merge"],
            "effect": f"{merged} chunk(s) shown: at most merge, "
            f"each scoring ≥ merge_ratio {params['merge_ratio']:g} of the best",
        }
    )
    return {"score": page.get("page_score"), "best_chunk_score": page.get("best"), "lists": lists, "factors": factors}
