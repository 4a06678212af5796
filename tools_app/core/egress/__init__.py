"""A sandboxed command's way out: hosts by name through agentweb's egress proxy, every
connection recorded, credentials added outside the sandbox (issue 35)."""
