# SPDX-License-Identifier: Apache-2.0
"""A site's name for people, from the analyzer's JSON: its `site` (the analyzer's one-line label,
`file.py:LINE`, or `train.py:12 > train.py:6` where rows listed together share their first user
line: the rule is the analyzer's alone), and for a test, the site seen from the test's function."""
import os


def frame_name(frame):
    where = os.path.basename(frame["file"]) if frame.get("file") else frame.get("module") or "?"
    line = frame.get("line")
    return f"{where}:{line}" if line is not None else where


def site_name(row):
    """The analyzer's label of a row that has frames (peak's, leaks' and oom's JSON); "" for
    none."""
    return row.get("site") or ""


def site_in(row, path, function):
    """The site seen from `function` in the file `path` (a test): its frame's `file.py:LINE`,
    then the user's frame below it when that is another (`test_x.py:30 > helpers.py:8`); the
    analyzer's label when the stack does not pass through that function."""
    frames = row.get("frames") or []
    path = os.path.realpath(path)
    user = next((frame for frame in frames if frame.get("user")), frames[0] if frames else None)
    inner = frame_name(user) if user else None
    for frame in frames:
        file = frame.get("file")
        if (frame.get("kind") == "python" and file and os.path.realpath(file) == path
                and frame.get("function", "").split(".")[-1] == function):
            outer = frame_name(frame)
            return outer if inner in (None, outer) else f"{outer} > {inner}"
    return site_name(row)
