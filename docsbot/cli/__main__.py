"""`python -m docsbot.cli`: the `docsbot` command."""

import sys

from docsbot.cli import main

sys.exit(main())
