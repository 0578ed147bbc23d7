"""Docs sites: which framework a repository uses, where its pages and navigation live, and page-level checks."""
