"""``docsbot mcp``: the index served to LLM agents over the Model Context Protocol: its tools
(:mod:`~docsbot.mcp.server`) and how they are served, over stdio or Streamable HTTP (:mod:`~docsbot.mcp.transport`)."""
