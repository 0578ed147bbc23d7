"""Prints the CPU seconds the nesting pre-check of request bodies takes on hostile bodies, against a plain one.

Run by hand: `.venv/bin/python bench/body_depth.py [--sizes 8,32,64,1024]` (sizes in KiB). Each hostile shape is
timed next to a plain JSON string of the same size; the ratio is what a quadratic check would blow up.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.api.body import check_json_depth  # noqa: E402
from service.errors import InvalidJson  # noqa: E402

SHAPES = {
    'quote then \\" x N': lambda n: b'"' + b'\\"' * ((n - 1) // 2),
    "deep brackets": lambda n: b"[" * n,
    "closed strings": lambda n: b'["' + b'x",["' * ((n - 2) // 6),
}


def plain(n: int) -> bytes:
    return json.dumps("a" * (n - 2)).encode()


def cpu_seconds(body: bytes) -> float:
    started = time.process_time()
    try:
        check_json_depth(body)
    except InvalidJson:
        pass
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,32,64,1024", help="comma-separated body sizes in KiB")
    args = parser.parse_args()
    sizes = [int(s) * 1024 for s in args.sizes.split(",")]
    print(f"{'shape':<20} {'size':>9} {'CPU s':>9} {'plain s':>9} {'ratio':>8}")
    for name, make in SHAPES.items():
        for size in sizes:
            hostile, baseline = cpu_seconds(make(size)), cpu_seconds(plain(size))
            ratio = hostile / max(baseline, 1e-6)
            print(f"{name:<20} {size // 1024:>6} KB {hostile:>9.4f} {baseline:>9.4f} {ratio:>8.1f}")


if __name__ == "__main__":
    main()
