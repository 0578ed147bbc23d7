"""Literal values a config imports from the repository's own modules (`import { presets } from './config/presets'`,
`require('./sidebars.json')`), read with `jsliteral` and never run; packages and files past the caps are OPAQUE."""

import posixpath

from service.agent.docsite.jsliteral import OPAQUE, Module, exported_value, read_module
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.routing import join
from service.agent.docsite.site import read_text

MODULE_SUFFIXES = ("", ".js", ".ts", ".mjs", ".cjs", ".mts", ".cts", ".json", "/index.js", "/index.ts")
MAX_IMPORT_DEPTH = 3  # modules importing modules; real configs go one or two deep
MAX_IMPORTED_FILES = 20  # modules read per config


class LocalImports:
    """Loaders for `jsliteral.read_module` that read the repository's own modules relative to `folder`."""

    def __init__(self, workspace, folder: str, depth: int = 0, read: list[str] | None = None) -> None:
        self.workspace = workspace
        self.folder = folder
        self.depth = depth
        self.read = [] if read is None else read  # shared by every loader of one config: files read so far
        self.modules: dict[str, Module | object] = {}
        self.paths: dict[str, str] = {}  # specifier -> the file it was read from

    def default(self, specifier: str):
        """The value `import x from specifier` (or `require(specifier)`) gives."""
        module = self._module(specifier)
        return module.exported if isinstance(module, Module) else module

    def named(self, specifier: str, name: str):
        """The value `import { name } from specifier` gives."""
        module = self._module(specifier)
        if isinstance(module, Module):
            value = module.binding(name)
            if value is OPAQUE and isinstance(module.exported, dict):  # `module.exports = {name: ...}`
                value = module.exported.get(name, OPAQUE)
            return value
        return module.get(name, OPAQUE) if isinstance(module, dict) else OPAQUE

    def _module(self, specifier: str):
        if not specifier.startswith(("./", "../")) or self.depth >= MAX_IMPORT_DEPTH:
            return OPAQUE  # a package, or too deep
        if specifier in self.modules:
            return self.modules[specifier]
        base = join(self.folder, specifier) or ""
        path, text = None, None
        for suffix in MODULE_SUFFIXES if base and len(self.read) < MAX_IMPORTED_FILES else ():
            text = read_text(self.workspace, base + suffix)
            if text is not None:
                path = base + suffix
                break
        if path is None or path in self.read:
            return OPAQUE
        self.read.append(path)
        self.paths[specifier] = path
        try:
            if text is None:
                found: Module | object = OPAQUE
            elif path.endswith(".json"):
                found = exported_value(text)
            else:
                child = LocalImports(self.workspace, posixpath.dirname(path), self.depth + 1, self.read)
                found = read_module(text, child.default, load_named=child.named)
        except Uncheckable:
            found = OPAQUE
        self.modules[specifier] = found
        return found
