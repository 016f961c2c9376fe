# SPDX-License-Identifier: Apache-2.0
"""Rows as a pandas DataFrame where pandas is installed, else as the list of dicts they are."""


def table(rows):
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)
