"""Code hosts: where repositories live and where pull requests are opened."""
