"""Faults injected into docsbot's HTML extraction, for tests/test_faults.py: a directory put on ``PYTHONPATH`` so
that every interpreter of a crawl (the crawl itself, the extraction pool's fork server and its workers) imports this
at start-up. Without ``DOCSBOT_TEST_EXTRACT_FAULTS`` it does nothing.

``DOCSBOT_TEST_EXTRACT_FAULTS`` is a comma-separated list of ``kind:argument``:

- ``hang:/docs/p3.html``: extracting a page whose URL ends so never returns (a converter that loops);
- ``crash:/docs/p4.html``: the worker process extracting it dies at once (a segfault, the OOM killer);
- ``panic:/docs/p2.html``: html-to-markdown raises its ``PanicError`` while converting that page (a bug in the
  library);
- ``slow:0.3``: every extraction takes 0.3 s longer (a slow machine).
"""

import os
import time

_SPEC = os.environ.get("DOCSBOT_TEST_EXTRACT_FAULTS", "")

if _SPEC:
    import docsbot.content.extract as _extract
    import docsbot.content.markdown as _markdown

    _original = _extract.extract_page
    _rules = [part.split(":", 1) for part in _SPEC.split(",") if ":" in part]
    _convert = _markdown.html_to_markdown.convert
    _panicking = []

    def convert(html, *args, **kwargs):  # noqa: ANN001, ANN201 - the patched function's own signature
        if _panicking:
            raise _markdown.html_to_markdown.PanicError("injected: the converter panicked")
        return _convert(html, *args, **kwargs)

    _markdown.html_to_markdown.convert = convert

    def extract_page(body, url, *args, **kwargs):  # noqa: ANN001, ANN201 - the patched function's own signature
        for kind, argument in _rules:
            if kind == "slow":
                time.sleep(float(argument))
            elif kind == "hang" and url.endswith(argument):
                time.sleep(3600)
            elif kind == "crash" and url.endswith(argument):
                os._exit(70)
            elif kind == "panic" and url.endswith(argument):
                _panicking.append(url)
                try:
                    return _original(body, url, *args, **kwargs)
                finally:
                    _panicking.clear()
        return _original(body, url, *args, **kwargs)

    _extract.extract_page = extract_page
