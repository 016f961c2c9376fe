# SPDX-License-Identifier: Apache-2.0
"""Sizes as people write them in markers: "2 GiB", "512MiB", "1.5 GB", 1048576."""
import re
from fractions import Fraction

_UNITS = {
    "": 1, "B": 1,
    "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20,
    "G": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TIB": 1 << 40,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(value):
    """Bytes in `value`: an int, or a number with a unit (binary K/KiB..., decimal KB...)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _SIZE.match(str(value))
    unit = match.group(2).upper() if match else None
    if unit not in _UNITS:
        raise ValueError(f"not a size: {value!r} (write bytes, or a number with KiB, MiB, GiB, "
                         "TiB, KB, MB, GB or TB)")
    # As the CLI reads sizes (format/size_text.h): a count of bytes must be whole; a fraction
    # of a larger unit is rounded to the nearest byte, as the sizes reports print were.
    number = Fraction(match.group(1)) * _UNITS[unit]
    if _UNITS[unit] == 1 and number.denominator != 1:
        raise ValueError(f"not a whole number of bytes: {value!r}")
    return int(number + Fraction(1, 2))


def format_size(n):
    """`n` bytes as the CLI prints sizes: "12.0 MiB"."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
