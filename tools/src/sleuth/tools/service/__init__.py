"""``sleuth tool-service``: one configured tool served over MCP streamable HTTP and plain JSON."""
