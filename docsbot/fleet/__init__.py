"""Fleets: many library versions kept fresh. The libraries file (:mod:`~docsbot.fleet.libraries`), a package's
documentation root from its registry (:mod:`~docsbot.fleet.registry`: the rules that read the metadata in
:mod:`~docsbot.fleet.roots`, the documentation host's probes in :mod:`~docsbot.fleet.probe`, an npm README read
from its tarball in :mod:`~docsbot.fleet.tarball`), a project's dependency files and their lock files
(:mod:`~docsbot.fleet.dependencies`, :mod:`~docsbot.fleet.locks`), versions as each ecosystem means them
(:mod:`~docsbot.fleet.versions`), and ``docsbot sync`` with its scheduler (:mod:`~docsbot.fleet.scheduler`: due
versions claimed in PostgreSQL, run locally or on Scrapyd nodes, and the table a sync ends with).
"""
