"""GitHub handlers register on their module's router, and bot/github/events.py only combines the routers; the
bot/github modules import one another without a cycle."""

import ast
import importlib
import pkgutil
from pathlib import Path

import bot.github
from bot.github import events
from bot.github.routing import Router

PACKAGE = Path(bot.github.__file__).resolve().parent


def test_a_handler_registers_for_an_event_and_action():
    router = Router()

    @router.register("pull_request", action="closed")
    def closed(bot, event):
        pass

    @router.register("pull_request")
    def any_action(bot, event):
        pass

    assert router.handlers("pull_request", "closed") == [any_action, closed]
    assert router.handlers("pull_request", "opened") == [any_action]
    assert router.handlers("issue_comment", "created") == []
    assert router.events == frozenset({"pull_request"})


def test_combined_routers_keep_each_ones_handlers_in_order():
    first, second = Router(), Router()
    first.register("status")(a := lambda bot, event: None)
    second.register("status")(b := lambda bot, event: None)
    second.register("check_run", action="completed")(c := lambda bot, event: None)
    combined = Router(first, second)
    assert combined.handlers("status", None) == [a, b]
    assert combined.handlers("check_run", "completed") == [c]
    assert first.handlers("status", None) == [a]  # combining leaves the parts alone


def test_every_handler_module_router_is_combined_into_the_events_router():
    """A module that registers handlers but is left out of events.ROUTER would never run them."""
    combined = set(events.ROUTER.routes())
    found = 0
    for module_info in pkgutil.iter_modules([str(PACKAGE)]):
        module = importlib.import_module(f"bot.github.{module_info.name}")
        router = getattr(module, "router", None)
        if isinstance(router, Router):
            found += 1
            missing = set(router.routes()) - combined
            assert not missing, f"bot.github.{module_info.name}: {missing} not in events.ROUTER"
    assert found >= 5
    assert events.handles("issue_comment", "created") and not events.handles("issue_comment", "deleted")


def github_imports(path: Path) -> set[str]:
    """The bot.github modules that `path` imports, anywhere in it (type-only imports count: a reader still
    follows them)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("bot.github.")}
        elif isinstance(node, ast.ImportFrom) and node.module == "bot.github":
            found |= {f"bot.github.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bot.github."):
            found.add(node.module)
    return found


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` (module -> the modules it imports) as a path that ends where it starts; None if none."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if (cycle := visit(imported)) is not None:
                return cycle
        path.pop()
        done.add(module)
        return None

    for start in sorted(graph):
        if (cycle := visit(start)) is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_and_only_one():
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert import_cycle({"a": {"a"}}) == ["a", "a"]


def test_the_bot_github_modules_import_one_another_without_a_cycle():
    graph = {f"bot.github.{path.stem}": github_imports(path) for path in PACKAGE.glob("*.py")}
    assert "bot.github.bot" in graph["bot.github.comments"]  # the graph does see the imports
    assert import_cycle(graph) is None
