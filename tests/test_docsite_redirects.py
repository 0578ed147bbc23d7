"""Redirects wherever a framework keeps them: a link to a redirect's source is valid, and a page moved on a site
that keeps redirects asks for one from its old address. Small sites modelled on real ones."""

import json

from service.agent.docs_check import DocsProblem, check_docs


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


# --- Mintlify: relative links to a redirect's source ------------------------------------------------------------

MINTLIFY = {
    "docs.json": json.dumps(
        {
            "name": "Orbit",
            "theme": "maple",
            "navigation": {"groups": [{"group": "Guides", "pages": ["guides/intro", "guides/webhooks", "api/auth"]}]},
            "redirects": [
                {"source": "/guides/hooks", "destination": "/guides/webhooks"},
                {"source": "/legacy/:slug*", "destination": "/guides/:slug*"},
            ],
        },
        indent=2,
    ),
    "guides/intro.mdx": "---\ntitle: Intro\n---\n\nSee [webhooks](webhooks).\n",
    "guides/webhooks.mdx": "---\ntitle: Webhooks\n---\n\n## Signing\n",
    "api/auth.mdx": "---\ntitle: Auth\n---\n",
}


def test_mintlify_relative_links_to_redirect_sources_are_valid(open_workspace):
    workspace = open_workspace(MINTLIFY)
    workspace.write("guides/intro.mdx", b"---\ntitle: Intro\n---\n\n[a](hooks) [b](../legacy/setup) [c](./hoks)\n")
    assert messages(check_docs(workspace)) == [("guides/intro.mdx", "broken link: ./hoks (no file guides/hoks)")]


def test_mintlify_move_asks_for_a_redirect_until_there_is_one(open_workspace):
    workspace = open_workspace(MINTLIFY)
    workspace.move("api/auth.mdx", "guides/auth.mdx")
    workspace.write("docs.json", MINTLIFY["docs.json"].replace('"api/auth"', '"guides/auth"').encode())
    assert messages(check_docs(workspace)) == [
        (
            "guides/auth.mdx",
            "this page moved from api/auth.mdx: add a redirect from `/api/auth` to `/guides/auth` in "
            "the `redirects` of docs.json, as the site does for moved pages",
        )
    ]
    config = json.loads(MINTLIFY["docs.json"].replace('"api/auth"', '"guides/auth"'))
    config["redirects"].append({"source": "/api/auth", "destination": "/guides/auth"})
    workspace.write("docs.json", json.dumps(config, indent=2).encode())
    assert check_docs(workspace).problems == []


def test_a_site_without_redirects_is_not_asked_for_one(open_workspace):
    config = json.loads(MINTLIFY["docs.json"])
    del config["redirects"]
    workspace = open_workspace({**MINTLIFY, "docs.json": json.dumps(config, indent=2)})
    workspace.move("api/auth.mdx", "guides/auth.mdx")
    workspace.write("docs.json", json.dumps(config, indent=2).replace('"api/auth"', '"guides/auth"').encode())
    assert check_docs(workspace).problems == []


# --- Astro Starlight ---------------------------------------------------------------------------------------------

STARLIGHT = {
    "astro.config.mjs": """import { defineConfig } from 'astro/config';
import starlight from '@astrojs/starlight';

export default defineConfig({
  site: 'https://docs.orbit.example',
  redirects: {
    '/getting-started/': '/start/install/',
    '/reference/[name]': '/api/[name]/',
    '/old/[...rest]': { status: 301, destination: '/start/[...rest]' },
  },
  integrations: [
    starlight({
      title: 'Orbit',
      sidebar: [
        { label: 'Start', items: ['start/install', 'api/client'] },
      ],
    }),
  ],
});
""",
    "src/content/docs/start/install.md": "---\ntitle: Install\n---\n",
    "src/content/docs/api/client.md": "---\ntitle: Client\n---\n",
}


def test_starlight_links_to_astro_redirect_sources_are_valid(open_workspace):
    workspace = open_workspace(STARLIGHT)
    workspace.write(
        "src/content/docs/start/install.md",
        b"---\ntitle: Install\n---\n\n[a](/getting-started/) [b](/reference/client/) [c](/old/x/y/) "
        b"[d](../../getting-started/) [e](/api/nope/) [f](/start/instal/)\n",
    )
    assert messages(check_docs(workspace)) == [
        ("src/content/docs/start/install.md", "broken link: /api/nope/ (no page has the route /api/nope/)"),
        ("src/content/docs/start/install.md", "broken link: /start/instal/ (no page has the route /start/instal/)"),
    ]


def test_starlight_move_asks_for_a_redirect(open_workspace):
    workspace = open_workspace(STARLIGHT)
    workspace.move("src/content/docs/api/client.md", "src/content/docs/api/clients.md")
    workspace.write("astro.config.mjs", STARLIGHT["astro.config.mjs"].replace("'api/client'", "'api/clients'").encode())
    assert messages(check_docs(workspace)) == [
        (
            "src/content/docs/api/clients.md",
            "this page moved from src/content/docs/api/client.md: add a redirect from "
            "`/api/client/` to `/api/clients/` in the `redirects` of defineConfig() in astro.config.mjs, as the site does "
            "for moved pages",
        )
    ]


# --- MkDocs redirects plugin --------------------------------------------------------------------------------------

MKDOCS = {
    "mkdocs.yml": """site_name: Orbit
theme:
  name: material
nav:
  - Home: index.md
  - Setup: setup/install.md
plugins:
  - search
  - redirects:
      redirect_maps:
        'install.md': 'setup/install.md'
        'old/guide.md': 'setup/install.md'
""",
    "docs/index.md": "# Orbit\n\n[install](setup/install.md)\n",
    "docs/setup/install.md": "# Install\n",
}


def test_mkdocs_links_to_redirect_maps_sources_are_valid(open_workspace):
    workspace = open_workspace(MKDOCS)
    workspace.write("docs/index.md", b"# Orbit\n\n[a](install.md) [b](old/guide.md) [c](old/guide/) [d](instal.md)\n")
    assert messages(check_docs(workspace)) == [("docs/index.md", "broken link: instal.md (no file docs/instal.md)")]


def test_mkdocs_move_asks_for_a_redirect_map_entry(open_workspace):
    workspace = open_workspace(MKDOCS)
    workspace.move("docs/setup/install.md", "docs/setup/installing.md")
    workspace.write(
        "mkdocs.yml", MKDOCS["mkdocs.yml"].replace("Setup: setup/install.md", "Setup: setup/installing.md").encode()
    )
    workspace.write("docs/index.md", b"# Orbit\n\n[install](setup/installing.md)\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/setup/installing.md",
            1,
            "this page moved from docs/setup/install.md: add a redirect from "
            "`setup/install.md` to `setup/installing.md` in the `redirect_maps` of the redirects plugin in mkdocs.yml, as "
            "the site does for moved pages",
        )
    ]


# --- Sphinx with sphinx-reredirects -------------------------------------------------------------------------------

SPHINX = {
    "docs/conf.py": """project = "Orbit"
extensions = ["sphinx_reredirects", "sphinx.ext.intersphinx"]
redirects = {
    "setup": "install/index.html",
    "old/*": "../install/index.html",
}
""",
    "docs/index.rst": "Orbit\n=====\n\n.. toctree::\n\n   install/index\n",
    "docs/install/index.rst": "Install\n=======\n",
}


def test_sphinx_html_links_to_redirect_sources_are_valid(open_workspace):
    workspace = open_workspace(SPHINX)
    workspace.write(
        "docs/index.rst",
        b"Orbit\n=====\n\n`a <setup.html>`_ `b <old/thing.html>`_ `c <setpu.html>`_\n\n"
        b".. toctree::\n\n   install/index\n",
    )
    assert messages(check_docs(workspace)) == [("docs/index.rst", "broken link: setpu.html (no document docs/setpu)")]


def test_sphinx_move_asks_for_a_redirect(open_workspace):
    workspace = open_workspace(SPHINX)
    workspace.move("docs/install/index.rst", "docs/installing.rst")
    workspace.write("docs/index.rst", b"Orbit\n=====\n\n.. toctree::\n\n   installing\n")
    assert messages(check_docs(workspace)) == [
        (
            "docs/installing.rst",
            "this page moved from docs/install/index.rst: add a redirect from `install/index` to "
            "`installing` in `redirects` in docs/conf.py, as the site does for moved pages",
        )
    ]
