"""ULIDs: 26 Crockford base32 digits of (milliseconds << 80 | random), sorting in creation order."""

import random

from service.ids import UlidGenerator, encode, new_id

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _digits(value: int) -> str:
    # The ULID spec's encoding, one digit at a time, most significant first.
    return "".join(CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def test_the_encoding_is_the_ulid_specs_digit_for_digit():
    rng = random.Random(20)
    cases = [(0, 0), (2**48 - 1, 2**80 - 1), (1, 0), (0, 1), (1_764_129_600_123, 2**79)]
    cases += [(rng.getrandbits(48), rng.getrandbits(80)) for _ in range(2000)]
    for ms, random_part in cases:
        assert encode(ms, random_part) == _digits(ms << 80 | random_part), (ms, random_part)
    assert encode(0, 0) == "0" * 26 and encode(2**48 - 1, 2**80 - 1) == "7" + "Z" * 25


def test_ids_sort_in_creation_order_within_a_millisecond():
    ids = UlidGenerator()
    made = [new_id("job", ids) for _ in range(5000)]
    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(len(i) == 4 + 26 and set(i[4:]) <= set(CROCKFORD) for i in made)
