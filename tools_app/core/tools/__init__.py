"""The tools: one module per family, `catalogue` (what each tool is, as plain data) and
`registry` (names to runnable specs).

Nothing is re-exported here, so that importing the catalogue (as the policy does) loads
neither pydantic nor the tools. The shared shapes are in `tools_app.core.tools.base`, the one
error type in `tools_app.core.tools.errors`, the registry (every tool: httpx, GitPython, the
shell analysis) in `tools_app.core.tools.registry`.
"""
