"""One home for the codes: the README's run failure table lists exactly the enum's codes, and the API's problem
table and the dashboard's page titles are the same table."""

import re
from pathlib import Path

from service.api.problems import PROBLEMS
from service.codes import ERRORS, RunFailure

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readmes_run_failure_table_lists_exactly_the_enums_codes():
    text = README.read_text()
    table = text[text.index("| `error.code` | What happened |") :]
    table = table[: table.index("\n\n")]
    listed = {code for row in table.splitlines()[2:] for code in re.findall(r"`([a-z_]+)`", row.split("|")[1])}
    assert listed == {failure.value for failure in RunFailure}


def test_every_run_failure_has_words_and_the_apis_status_where_the_api_uses_the_code():
    for failure in RunFailure:
        assert failure.words
        assert failure.status == (PROBLEMS[failure.value][0] if failure.value in PROBLEMS else None)
    assert RunFailure.JOB_ARCHIVED.status == 409 and RunFailure.BRANCH_CONFLICT.status is None


def test_the_apis_problems_are_the_tables_api_codes():
    assert PROBLEMS == {code: (known.status, known.title) for code, known in ERRORS.items() if known.api}
    assert "key_not_found" in ERRORS and "key_not_found" not in PROBLEMS
