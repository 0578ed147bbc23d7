"""Automations: agent runs started by a code change, a schedule or a webhook instead of a person."""
