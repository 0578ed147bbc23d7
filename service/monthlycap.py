"""A run's model calls against its account's monthly token cap: checked before each call, counted right after it,
so runs in parallel see each other's spending and together pass the cap by at most one call each."""

from service.agent.model import Usage
from service.codes import RunFailure
from service.errors import MonthlyBudgetExceeded, RunFailed
from service.store.usage import UsageLedger


class AccountSpending:
    """The monthly cap of the account (`host`, `account`) as one run sees it; `key_id` is the key that sent the
    run's message, whose monthly total counts it too."""

    def __init__(self, ledger: UsageLedger, *, host: str, account: str, key_id: str | None) -> None:
        self._ledger = ledger
        self._host = host
        self._account = account
        self._key_id = key_id

    def allow_call(self) -> None:
        """RunFailed (`monthly_budget_exceeded`) once the account has used up its cap."""
        try:
            self._ledger.check(self._host, self._account)
        except MonthlyBudgetExceeded as exc:
            raise RunFailed(RunFailure.MONTHLY_BUDGET_EXCEEDED, f"the run stopped: {exc.detail}") from None

    def spent(self, usage: Usage) -> None:
        if not (usage.input_tokens or usage.output_tokens):
            return  # a model that reports no usage (the scripted one) leaves the totals alone
        self._ledger.add(self._host, self._account, self._key_id, usage.to_api())
