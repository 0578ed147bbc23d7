"""The sample documentation repository the demo works on (the bundled demo script edits it)."""

FILES = {
    "README.md": "# Acme Widgets\n\nThe documentation lives in [docs/](docs/index.md).\n",
    "mkdocs.yml": "site_name: Acme Widgets\nnav:\n  - Home: index.md\n  - Install: install.md\n  - Usage: usage.md\n",
    "docs/index.md": (
        "# Acme Widgets\n\nAcme Widgets turns sprockets into widgets.\n\n- [Install](install.md)\n- [Usage](usage.md)\n"
    ),
    "docs/install.md": (
        "# Install\n\nInstall the package from PyPI:\n\n```sh\npip install acme-widgets\n```\n\n"
        "Then check it works:\n\n```sh\nacme --version\n```\n"
    ),
    "docs/usage.md": ("# Usage\n\nRun `acme build` in a folder of sprockets.\nThe widgets appear in `./widgets`.\n"),
}

PROMPT = (
    "Add a Troubleshooting page for installation problems (permission errors, an old pip), "
    "link it from the install page and the index, and add it to the navigation."
)
