"""The git workspace: bare mirrors, an in-memory overlay over a commit's tree, plumbing commits and pushes."""
