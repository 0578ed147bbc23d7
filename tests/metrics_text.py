"""Reading Prometheus's text format in tests, with prometheus_client's own parser."""

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families


def parse(text: str) -> dict[str, dict]:
    """Every sample of a scrape, by name, as {sorted labels tuple: value}."""
    samples: dict[str, dict] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict[str, dict], name: str, **labels) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for key, v in samples.get(name, {}).items() if wanted <= set(key))


def recorded(instrument, name: str, **labels) -> float:
    """What this process recorded in `instrument` (in memory: tests do not enable the metric files)."""
    registry = CollectorRegistry()
    registry.register(instrument)
    return registry.get_sample_value(name, labels) or 0.0
