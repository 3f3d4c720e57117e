"""Real MCP servers for tests, written with the SDK's server side (`MCPServer`, the SDK's
FastMCP): `notes_server.py` runs over stdio (copied into a test project, it is started by
the VM inside the sandbox), `http_server` serves streamable HTTP on loopback."""
