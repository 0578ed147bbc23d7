"""Webhooks to API callers (Standard Webhooks): signing, the address guard, sending with retries, the fan-out."""
