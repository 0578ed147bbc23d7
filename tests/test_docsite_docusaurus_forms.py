"""Docusaurus configs in every form the templates and real sites use (read as literals, never run), version
options, further docs instances and client redirects, on small sites modelled on real ones."""

import json

import pytest

from service.agent.docs_check import DocsProblem, check_docs
from service.agent.docsite.detect import detect_site

# The Docusaurus 2 beta template: the whole assignment in parentheses, preset options in `({...})` casts.
BETA_TEMPLATE = """// @ts-check
const lightCodeTheme = require('prism-react-renderer/themes/github');

/** @type {import('@docusaurus/types').DocusaurusConfig} */
(module.exports = {
  title: 'Widget',
  url: 'https://widget.example',
  baseUrl: '/',
  presets: [
    [
      '@docusaurus/preset-classic',
      /** @type {import('@docusaurus/preset-classic').Options} */
      ({
        docs: {
          sidebarPath: require.resolve('./sidebars.js'),
          routeBasePath: 'manual',
          editUrl: 'https://github.com/widget/site/edit/main/',
        },
        theme: {customCss: require.resolve('./src/css/custom.css')},
      }),
    ],
  ],
  themeConfig:
    /** @type {import('@docusaurus/preset-classic').ThemeConfig} */
    ({navbar: {title: 'Widget'}, prism: {theme: lightCodeTheme}}),
});
"""
PARENTHESISED = BETA_TEMPLATE.replace("(module.exports = {", "module.exports = ({").replace("\n});\n", "\n});\n")
# The Docusaurus 2 template: a `const` exported at the end.
CONST_EXPORTED = BETA_TEMPLATE.replace("(module.exports = {", "const config = {").replace(
    "\n});\n", "\n};\n\nmodule.exports = config;\n"
)
# Docusaurus 3's TypeScript template.
EXPORT_DEFAULT = BETA_TEMPLATE.replace("(module.exports = {", "const config: Config = {").replace(
    "\n});\n", "\n};\n\nexport default config;\n"
)
EXPORT_LITERAL = BETA_TEMPLATE.replace("(module.exports = {", "export default {").replace("\n});\n", "\n};\n")


@pytest.mark.parametrize(
    "config",
    [BETA_TEMPLATE, PARENTHESISED, CONST_EXPORTED, EXPORT_DEFAULT, EXPORT_LITERAL],
    ids=["beta-statement", "parenthesised", "const-exported", "export-default-const", "export-default-literal"],
)
def test_every_config_form_gives_the_docs_options(open_workspace, config):
    workspace = open_workspace(
        {
            "docusaurus.config.js": config,
            "sidebars.js": "module.exports = {manual: ['intro', 'setup']};\n",
            "docs/intro.md": "# Intro\n",
            "docs/setup.md": "# Setup\n",
        }
    )
    site = detect_site(workspace)
    assert (site.routing["route_base"], site.nav_files, site.explicit_nav) == ("/manual", ["sidebars.js"], True)
    workspace.write("docs/intro.md", b"# Intro\n\n[setup](/manual/setup) [typo](/manual/setpu)\n")
    workspace.write("docs/extra.md", b"# Extra\n")
    assert [(p.path, p.message.split(":")[0]) for p in check_docs(workspace).problems] == [
        ("docs/extra.md", "new page is not in the navigation, so readers cannot find it"),
        ("docs/intro.md", "broken link"),
    ]


# --- versions ----------------------------------------------------------------------------------------------------

VERSIONS_SITE = {
    "docusaurus.config.js": """module.exports = ({
  presets: [['classic', ({docs: {
    sidebarPath: require.resolve('./sidebars.js'),
    lastVersion: 'current',
    onlyIncludeVersions: ['current', '3.x'],
    versions: {current: {label: '4.x (next)', path: '4.x'}, '3.x': {path: 'legacy'}},
  }})]],
});
""",
    "sidebars.js": "module.exports = {docs: ['intro']};\n",
    "versions.json": json.dumps(["3.x", "2.x"]),
    "docs/intro.md": "# Intro 4\n",
    "versioned_docs/version-3.x/intro.md": "# Intro 3\n",
    "versioned_docs/version-2.x/intro.md": "# Intro 2\n",
    "versioned_sidebars/version-3.x-sidebars.json": json.dumps({"docs": ["intro"]}),
    "versioned_sidebars/version-2.x-sidebars.json": json.dumps({"docs": ["intro"]}),
}


def test_version_paths_last_version_and_only_included_versions_decide_routes(open_workspace):
    workspace = open_workspace(VERSIONS_SITE)
    workspace.write(
        "docs/intro.md",
        b"# Intro 4\n\n[current](/docs/4.x/intro) [3](/docs/legacy/intro) "
        b"[not built](/docs/2.x/intro) [not at next](/docs/next/intro)\n",
    )
    assert [p.message for p in check_docs(workspace).problems] == [
        "broken link: /docs/2.x/intro (no doc has the route /docs/2.x/intro)",
        "broken link: /docs/next/intro (no doc has the route /docs/next/intro)",
    ]


def test_a_build_that_copies_the_docs_into_the_latest_version_serves_them_at_its_route(open_workspace):
    # includeCurrentVersion: false, and the latest listed version's folder is made by a build script.
    workspace = open_workspace(
        {
            "website/docusaurus.config.js": "module.exports = {presets: [['classic', {docs: {path: '../docs', "
            "includeCurrentVersion: false, sidebarPath: require.resolve("
            "'./sidebars.json')}}]]};\n",
            "website/sidebars.json": json.dumps({"docs": ["intro", "api"]}),
            "website/versions.json": json.dumps(["1.1", "1.0"]),
            "website/versioned_docs/version-1.0/intro.md": "# Intro 1.0\n",
            "website/versioned_sidebars/version-1.0-sidebars.json": json.dumps({"docs": ["intro"]}),
            "docs/intro.md": "# Intro\n",
            "docs/api.md": "# API\n",
        }
    )
    site = detect_site(workspace)
    assert (site.docs_root, site.routing["current_route"]) == ("docs", "/docs")
    workspace.write(
        "website/versioned_docs/version-1.0/intro.md",
        b"# Intro 1.0\n\n[latest api](/docs/api) [old](/docs/1.0/intro) [none](/docs/apx)\n",
    )
    assert [p.message for p in check_docs(workspace).problems] == [
        "broken link: /docs/apx (no doc has the route /docs/apx)"
    ]


# --- further docs instances ------------------------------------------------------------------------------------

INSTANCES = {
    "docusaurus.config.ts": """import type {Config} from '@docusaurus/types';

const config: Config = {
  presets: [['classic', {docs: {sidebarPath: './sidebars.ts'}}]],
  plugins: [
    [
      '@docusaurus/plugin-content-docs',
      {id: 'api', path: 'api', routeBasePath: 'api', sidebarPath: './sidebarsApi.ts'},
    ],
    ['@docusaurus/plugin-content-docs', {id: 'community', path: 'community', routeBasePath: 'community'}],
    [
      '@docusaurus/plugin-client-redirects',
      {
        redirects: [
          {to: '/docs/intro', from: ['/docs/welcome', '/getting-started']},
          {to: '/api/client', from: '/api/v1/client'},
        ],
        fromExtensions: ['html'],
      },
    ],
  ],
};

export default config;
""",
    "sidebars.ts": "const sidebars = {docs: ['intro']};\nexport default sidebars;\n",
    "sidebarsApi.ts": "export default {api: ['client', {type: 'category', label: 'More', items: ['server']}]};\n",
    "docs/intro.md": "# Intro\n",
    "api/client.md": "# Client\n",
    "api/server.md": "# Server\n",
    "community/help.md": "# Help\n",
}


def test_every_docs_instance_has_its_routes_and_sidebar(open_workspace):
    workspace = open_workspace(INSTANCES)
    site = detect_site(workspace)
    assert site.nav_files == ["sidebars.ts", "sidebarsApi.ts"]
    workspace.write(
        "docs/intro.md",
        b"# Intro\n\n[client](/api/client) [server](../api/server.md) [help](/community/help) [gone](/api/nope)\n",
    )
    workspace.write("api/storage.md", b"# Storage\n")
    workspace.write("community/chat.md", b"# Chat\n")  # its sidebar is generated
    assert check_docs(workspace).problems == [
        DocsProblem(
            "api/storage.md",
            1,
            "new page is not in the navigation, so readers cannot find it: add "
            "'storage' to a sidebar in sidebarsApi.ts (or set its front matter `id` and "
            "list that)",
        ),
        DocsProblem("docs/intro.md", 3, "broken link: /api/nope (no doc has the route /api/nope)"),
    ]


def test_moving_a_page_of_another_instance_breaks_its_links_and_entry_and_asks_for_a_redirect(open_workspace):
    workspace = open_workspace({**INSTANCES, "docs/intro.md": "# Intro\n\nSee [the server](/api/server).\n"})
    workspace.move("api/server.md", "api/servers.md")
    assert [(p.path, p.message.split(",")[0]) for p in check_docs(workspace).problems] == [
        ("api/servers.md", "new page is not in the navigation"),
        (
            "api/servers.md",
            "this page moved from api/server.md: add a redirect from `/api/server` to `/api/servers` "
            "in the `redirects` of @docusaurus/plugin-client-redirects in docusaurus.config.ts",
        ),
        ("docs/intro.md", "link to /api/server"),
        ("sidebarsApi.ts", "navigation entry `server` points to api/server.md"),
    ]


def test_client_redirect_sources_are_valid_routes(open_workspace):
    workspace = open_workspace(INSTANCES)
    workspace.write(
        "docs/intro.md",
        b"# Intro\n\n[a](/docs/welcome) [b](/api/v1/client) [c](/docs/welcom) "
        b"[d](/api/server.html) [e](/api/servers.html)\n",
    )
    assert [p.message for p in check_docs(workspace).problems] == [
        "broken link: /api/servers.html (no doc has the route /api/servers.html)",
        "broken link: /docs/welcom (no doc has the route /docs/welcom)",
    ]


def test_hostile_parentheses_and_redirects_are_tolerated(open_workspace):
    deep = "module.exports = " + "(" * 5_000 + "{}" + ")" * 5_000 + ";\n"
    workspace = open_workspace(
        {
            "docusaurus.config.js": deep,
            "docs/intro.md": "# Intro\n",
        }
    )
    site = detect_site(workspace)
    assert (site.framework, site.docs_root) == ("docusaurus", "docs")  # defaults: the config is too deep to read
    odd = (
        "module.exports = {plugins: [['@docusaurus/plugin-client-redirects', {redirects: [{from: 3}, 'x', "
        "{from: [null, '/ok']}, {to: '/a'}]}]]};\n"
    )
    workspace = open_workspace({"docusaurus.config.js": odd, "docs/intro.md": "# Intro\n"})
    assert detect_site(workspace).routing["redirects"] == ["/ok"]


# --- a config split over the repository's own modules ------------------------------------------------------------

SPLIT_CONFIG = {
    "website/docusaurus.config.ts": """import type {Config} from '@docusaurus/types';
import {presetsConfig} from './config/presets';
import i18n from './config/i18n.json';
const {redirects} = require('./config/redirects.js');

const config: Config = {
  title: 'Orbit',
  baseUrl: '/',
  i18n,
  presets: presetsConfig,
  plugins: [['@docusaurus/plugin-client-redirects', {redirects}]],
};

export default config;
""",
    "website/config/presets.ts": """import type * as Preset from '@docusaurus/preset-classic';
import {versionsMetadata} from '../constants';

export const presetsConfig = [
  [
    'classic',
    {
      docs: {path: 'guides', routeBasePath: 'guides', sidebarPath: './sidebars.ts', versions: versionsMetadata},
    } satisfies Preset.Options,
  ],
];
""",
    "website/constants.ts": "export const versionsMetadata = {current: {label: 'next'}};\n",
    "website/config/i18n.json": '{"defaultLocale": "en", "locales": ["en"]}\n',
    "website/config/redirects.js": "module.exports = {redirects: [{from: '/guides/old', to: '/guides/intro'}]};\n",
    "website/sidebars.ts": "export default {guides: ['intro']};\n",
    "website/guides/intro.md": "# Intro\n",
}


def test_a_config_split_over_local_modules_is_read_through_its_imports(open_workspace):
    workspace = open_workspace(SPLIT_CONFIG)
    site = detect_site(workspace)
    assert (site.docs_root, site.routing["route_base"], site.nav_files) == (
        "website/guides",
        "/guides",
        ["website/sidebars.ts"],
    )
    workspace.write("website/guides/intro.md", b"# Intro\n\n[self](/guides/intro) [old](/guides/old) [no](/guides/x)\n")
    assert [p.message for p in check_docs(workspace).problems] == [
        "broken link: /guides/x (no doc has the route /guides/x)"
    ]


def test_import_cycles_packages_and_long_chains_are_bounded(open_workspace):
    chain = {f"website/c{i}.js": f"import {{v}} from './c{i + 1}';\nexport const v = v;\n" for i in range(30)}
    workspace = open_workspace(
        {
            **chain,
            "website/docusaurus.config.js": "import {v} from './c0';\nimport {w} from './docusaurus.config.js';\n"
            "import {x} from '@acme/shared';\nimport {y} from '../../outside';\n"
            "export default {presets: [['classic', {docs: {path: 'guides', extra: v}}]]};\n",
            "website/guides/intro.md": "# Intro\n",
        }
    )
    assert detect_site(workspace).docs_root == "website/guides"


def test_instances_without_a_default_one_and_sidebars_named_through_require_resolve(open_workspace):
    workspace = open_workspace(
        {
            "docusaurus.config.js": """const path = require('path');

module.exports = {
  presets: [['classic', ({docs: false, blog: false})]],
  plugins: [
    ['@docusaurus/plugin-content-docs', {
      id: 'users', path: path.resolve(__dirname, 'docs-users'), routeBasePath: 'users',
      sidebarPath: require.resolve('./sidebars-users.js'),
    }],
    ['@docusaurus/plugin-content-docs', {
      id: 'developers', path: 'docs-dev', routeBasePath: 'developers',
      sidebarPath: require.resolve('./sidebars-dev.js'),
    }],
  ],
};
""",
            "sidebars-users.js": "module.exports = {users: ['start']};\n",
            "sidebars-dev.js": "module.exports = {dev: ['build']};\n",
            "docs-users/start.md": "# Start\n",
            "docs-dev/build.md": "# Build\n",
        }
    )
    site = detect_site(workspace)
    assert (site.docs_root, site.extra_roots, site.nav_files) == (
        "docs-users",
        ("docs-dev",),
        ["sidebars-users.js", "sidebars-dev.js"],
    )
    workspace.write("docs-dev/release.md", b"# Release\n\n[start](/users/start) [build](/developers/build)\n")
    assert [(p.path, p.message) for p in check_docs(workspace).problems] == [
        (
            "docs-dev/release.md",
            "new page is not in the navigation, so readers cannot find it: add 'release' to a "
            "sidebar in sidebars-dev.js (or set its front matter `id` and list that)",
        )
    ]
