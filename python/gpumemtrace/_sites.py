# SPDX-License-Identifier: Apache-2.0
"""A call stack's name for people: `file.py:LINE`, from the analyzer's frames (leaf first)."""
import os


def frame_name(frame):
    where = os.path.basename(frame["file"]) if frame.get("file") else frame.get("module") or "?"
    line = frame.get("line")
    return f"{where}:{line}" if line is not None else where


def user_frame(frames):
    """The first frame in the user's code (the analyzer marks it `user`), else the leaf."""
    for frame in frames or []:
        if frame.get("user"):
            return frame
    return frames[0] if frames else None


def site_name(frames):
    """`file.py:LINE`: where the user's code made the call; "" for no stack."""
    frame = user_frame(frames)
    return frame_name(frame) if frame else ""


def site_in(frames, path, function):
    """The site seen from `function` in the file `path` (a test): its frame's `file.py:LINE`,
    then the user's frame below it when that is another (`test_x.py:30 > helpers.py:8`); the
    plain site when the stack does not pass through that function."""
    path = os.path.realpath(path)
    for frame in frames or []:
        file = frame.get("file")
        if (frame.get("kind") == "python" and file and os.path.realpath(file) == path
                and frame.get("function", "").split(".")[-1] == function):
            inner = site_name(frames)
            outer = frame_name(frame)
            return outer if inner in ("", outer) else f"{outer} > {inner}"
    return site_name(frames)
