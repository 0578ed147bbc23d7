"""Sphinx command-line options: `.. program::` / `.. option::` targets and `:option:` references, named by
program and option string as Sphinx's std domain names them, on a small site modelled on a CLI tool's docs."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site
from service.agent.docsite.rst import parse_rst
from service.agent.docsite.sphinx import option_keys

SITE = {
    "docs/conf.py": "project = 'tool'\nextensions = []\n",
    "docs/index.rst": "Tool\n====\n\n.. toctree::\n\n   usage\n   man/tool\n   man/tool-serve\n",
    "docs/man/tool.rst": (
        "tool\n====\n\n.. program:: tool\n\n.. option:: -b name, --builder name\n\n   The builder.\n\n"
        ".. option:: --color[=WHEN]\n\n   Colours; see also :option:`-b`.\n\n"
        ".. option:: -q\n             -Q\n\n   Quiet.\n"
    ),
    "docs/man/tool-serve.rst": (
        "tool serve\n==========\n\n.. program:: tool serve\n\n.. option:: --port PORT\n\n   The port.\n"
    ),
    "docs/usage.rst": (
        "Usage\n=====\n\nRun with :option:`tool -b`, quietly with :option:`tool -Q`, and serve with "
        ":option:`tool serve --port 80 <tool serve --port>`.\n\n"
        ".. program:: tool\n\nHere :option:`--builder html <--builder>` and :option:`--color=always` need no "
        "program.\n"
    ),
}


def test_option_targets_keep_their_program():
    page = parse_rst(SITE["docs/man/tool.rst"] + "\n.. program:: None\n\n.. option:: --global\n")
    assert page.options == {
        ("tool", "-b"),
        ("tool", "--builder"),
        ("tool", "--color"),
        ("tool", "-q"),
        ("tool", "-Q"),
        ("", "--global"),
    }
    [reference] = [link for link in page.links if link.kind.value == "option"]
    assert (reference.target, reference.program) == ("-b", "tool")


def test_option_keys_are_tried_the_way_sphinx_does():
    assert option_keys("", "git commit --amend") == [
        ("", "git commit --amend"),
        ("", "git"),
        ("git", "commit --amend"),
        ("git-commit", "--amend"),
    ]
    assert option_keys("tool", "--color[=WHEN]") == [
        ("tool", "--color[=WHEN]"),
        ("tool", "--color["),
        ("tool", "--color"),
    ]


def test_references_to_existing_options_pass(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write("docs/usage.rst", (SITE["docs/usage.rst"] + "\nAlso :option:`tool --builder`.\n").encode())
    assert check_docs(workspace).problems == []


def test_a_new_reference_to_an_option_no_page_defines_is_reported(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write(
        "docs/usage.rst", (SITE["docs/usage.rst"] + "\nAnd :option:`tool --nope`, :option:`!--not-linked`.\n").encode()
    )
    assert [p.message for p in check_docs(workspace).problems] == [
        "unknown option: tool --nope (no `.. option::` defines `tool --nope`; the page's current program is `tool`)"
    ]


def test_deleting_the_page_of_the_options_breaks_every_reference_to_them(open_workspace):
    workspace = open_workspace(SITE)
    site = detect_site(workspace)
    workspace.delete("docs/man/tool.rst")
    problems = check_docs(workspace, site).problems
    # Four references to the deleted page's options; the `tool serve` one still resolves.
    messages = sorted(p.message for p in problems if p.path == "docs/usage.rst")
    assert messages == [
        f"link to {written}, which this run moved or deleted"
        for written in ("--builder", "--color=always", "tool -Q", "tool -b")
    ]
    assert any(p.path == "docs/index.rst" and "man/tool" in p.message for p in problems)


def test_removing_an_option_from_its_page_breaks_references_elsewhere(open_workspace):
    workspace = open_workspace(SITE)
    text = SITE["docs/man/tool.rst"].replace(".. option:: -q\n             -Q\n\n   Quiet.\n", "")
    workspace.write("docs/man/tool.rst", text.encode())
    problems = [(p.path, p.message) for p in check_docs(workspace).problems]
    assert problems == [
        ("docs/usage.rst", "link to tool -Q no longer resolves after this run (no `.. option::` defines `tool -Q`)")
    ]


def test_options_an_extension_generates_are_not_judged(open_workspace):
    site = dict(SITE, **{"docs/conf.py": "extensions = ['sphinxcontrib.autoprogram']\n"})
    workspace = open_workspace(site)
    workspace.write("docs/usage.rst", (SITE["docs/usage.rst"] + "\nAnd :option:`tool --generated`.\n").encode())
    report = check_docs(workspace)
    assert report.problems == []
    assert any("autoprogram" in note for note in report.notes)


# --- MyST: the same std domain, written as `{program}`/`{option}` directives and the `{option}` role -----------

MYST_SITE = {
    "docs/conf.py": "project = 'tool'\nextensions = ['myst_parser']\n",
    "docs/index.md": "# Tool\n\n```{toctree}\nusage\nman/tool\n```\n",
    "docs/man/tool.md": (
        "# tool\n\n```{program} tool\n```\n\n```{option} -b NAME, --builder NAME\n\nThe builder.\n```\n\n"
        ":::{option} --color[=WHEN]\nColours; see also {option}`-b`.\n:::\n\n"
        "```{option} -q\nQuiet.\n```\n"
    ),
    "docs/usage.md": (
        "# Usage\n\nRun with {option}`tool -b` and quietly with {option}`tool -q`.\n\n"
        "```{program} tool\n```\n\nHere {option}`--builder html <--builder>` and {option}`--color=always` need no "
        "program.\n"
    ),
}


def test_myst_option_directives_and_roles_keep_their_program():
    from service.agent.docsite.pages import Mode, parse_page

    page = parse_page(MYST_SITE["docs/man/tool.md"], Mode.MYST)
    assert page.options == {("tool", "-b"), ("tool", "--builder"), ("tool", "--color"), ("tool", "-q")}
    usage = parse_page(MYST_SITE["docs/usage.md"] + "Not linked: {option}`!--raw`.\n", Mode.MYST)
    assert [(link.target, link.program) for link in usage.links if link.kind.value == "option"] == [
        ("tool -b", ""),
        ("tool -q", ""),
        ("--builder", "tool"),
        ("--color=always", "tool"),
    ]


def test_myst_option_references_are_checked(open_workspace):
    workspace = open_workspace(MYST_SITE)
    workspace.write(
        "docs/usage.md", (MYST_SITE["docs/usage.md"] + "\nAlso {option}`--builder` and {option}`--nope`.\n").encode()
    )
    assert [p.message for p in check_docs(workspace).problems] == [
        "unknown option: --nope (no `.. option::` defines `--nope`; the page's current program is `tool`)"
    ]


def test_removing_a_myst_option_breaks_references_elsewhere(open_workspace):
    workspace = open_workspace(MYST_SITE)
    text = MYST_SITE["docs/man/tool.md"].replace("```{option} -q\nQuiet.\n```\n", "")
    workspace.write("docs/man/tool.md", text.encode())
    assert [(p.path, p.message) for p in check_docs(workspace).problems] == [
        ("docs/usage.md", "link to tool -q no longer resolves after this run (no `.. option::` defines `tool -q`)")
    ]
