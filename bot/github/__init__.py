"""GitHub: App authentication, a synchronous API client, and the `github` code host."""
