"""The App's private key, parsed once per process: loading an RSA key checks it (about 0.1 s, several times that on
a busy machine), and every job builds its context, which reads the key three times, anew."""

import functools

from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import load_pem_private_key


@functools.lru_cache(maxsize=4)
def load(pem: bytes) -> PrivateKeyTypes:
    """The unencrypted PEM private key `pem`, parsed once per distinct text (key objects are immutable); raises
    what `load_pem_private_key` raises, and a failure is not remembered."""
    return load_pem_private_key(pem, password=None)
