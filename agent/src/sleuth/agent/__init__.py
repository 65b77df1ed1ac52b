"""The agent service: ReAct loop, model client, tools, tool service, HTTP API and metrics."""
