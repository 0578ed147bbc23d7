"""The documentation agent: model adapters, sandboxed file tools, docs checks and the agent loop."""
