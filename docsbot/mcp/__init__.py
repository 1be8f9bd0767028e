"""``docsbot mcp``: the index served to LLM agents over the Model Context Protocol (:mod:`~docsbot.mcp.server`)."""
