"""Tools the agent can call. Every tool, in-process or remote, implements :class:`Tool`."""

from sleuth.core.tools import ToolSpec
from sleuth.tools.base import Citation, Tool, ToolError, ToolOutput, ToolUnavailable

__all__ = ["Citation", "Tool", "ToolError", "ToolOutput", "ToolSpec", "ToolUnavailable"]
