"""Automations (issue 21): work that starts by itself on a code change, a schedule or a webhook."""
