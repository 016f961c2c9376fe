#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loads a `gpumemtrace html` page in headless Chromium and runs a list of steps on it.

Usage: html_page_probe.py CHROMIUM PAGE STEPS_JSON

STEPS_JSON is a file holding a JSON list; each step is one of
  {"eval": "expression"}   its value (JSON), kept in the results
  {"move": "expression"}   the expression gives {x, y} in the viewport: the mouse moves there
                           (null: it does not move, and the result is null)
  {"click": "expression"}  the same, then a left click (press and release) there
  {"load": "#fragment"}    the page loaded again with that fragment
  {"shot": "selector", "path": "file.png"}  a PNG of that element (its box is the result)
Prints one JSON object: {"results": [one per step], "errors": [...], "load_ms": N} where
load_ms is the time from navigation to the page's script having drawn (data-ready), and errors
are the console errors and uncaught exceptions of every load.

Exit status 77 when the browser cannot be started or does not answer: the caller skips.
"""

import base64
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from html_browser import Browser  # noqa: E402


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    chromium, page, steps_path = sys.argv[1:]
    with open(steps_path) as f:
        steps = json.load(f)
    url = "file://" + os.path.abspath(page)
    with tempfile.TemporaryDirectory(prefix="gmt-chromium-") as profile:
        browser = Browser(chromium, profile)
        try:
            if not browser.open_tab():
                return 77
            started = time.monotonic()
            browser.load(url)
            load_ms = (time.monotonic() - started) * 1000
            results = []
            for step in steps:
                if "eval" in step:
                    results.append(browser.evaluate(step["eval"]))
                elif "move" in step or "click" in step:
                    where = browser.evaluate(step.get("move", step.get("click")))
                    if not where:  # nothing there to point at: the result says so
                        results.append(None)
                        continue
                    mouse = {"x": where["x"], "y": where["y"], "button": "none", "clickCount": 1}
                    browser.send("Input.dispatchMouseEvent", dict(mouse, type="mouseMoved"))
                    if "click" in step:
                        mouse["button"] = "left"
                        browser.send("Input.dispatchMouseEvent", dict(mouse, type="mousePressed"))
                        browser.send("Input.dispatchMouseEvent", dict(mouse, type="mouseReleased"))
                    results.append(where)
                elif "shot" in step:
                    # A PNG of the element the selector names, whole, however far down the page.
                    box = browser.evaluate("""(() => {
                      const e = document.querySelector(%s);
                      if (!e) return null;
                      e.scrollIntoView();
                      const r = e.getBoundingClientRect();
                      return {x: r.left + window.scrollX, y: r.top + window.scrollY,
                              width: r.width, height: r.height};
                    })()""" % json.dumps(step["shot"]))
                    if box:
                        shot = browser.send("Page.captureScreenshot", {
                            "format": "png", "captureBeyondViewport": True,
                            "clip": dict(box, scale=1)})
                        with open(step["path"], "wb") as f:
                            f.write(base64.b64decode(shot["data"]))
                    results.append(box)
                elif "load" in step:
                    browser.load("about:blank", drawn=False)
                    browser.load(url + step["load"])
                    results.append(None)
            print(json.dumps({"results": results, "errors": browser.errors(),
                              "load_ms": round(load_ms, 1)}))
            return 0
        finally:
            browser.close()


if __name__ == "__main__":
    sys.exit(main())
