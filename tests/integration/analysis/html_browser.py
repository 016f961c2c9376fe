#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Opens a `gpumemtrace html` page in headless Chromium and reports what a person would see.

Usage: html_browser.py CHROMIUM PAGE SCREENSHOT

Drives the browser with the DevTools protocol over --remote-debugging-pipe (NUL-separated JSON
on file descriptors 3 and 4), so that no websocket library is needed. It loads the page, waits
for its script to finish drawing, hovers and clicks the first timeline at its peak with real
mouse events, reads what the page shows, loads the page again with #click=<peak> (the page's
own hook), saves a full-page screenshot, and prints one JSON object on stdout:

  errors        console errors, uncaught exceptions and error log entries
  chart         the first chart's data-peak-bytes (the tallest stack it drew) and the model's,
                what it stacks by, the views drawn above its scale, its legend's layers, and
                the rows of the page's role and module tables
  tooltip       the tooltip's text while hovering the peak
  click         the moment panel after the click: marker, the first site's bytes and function,
                the text of its frames
  fragment      the same panel after loading with #click=<peak>
  flame_total   the flame graph's root bytes

Exit status 77 when the browser cannot be started or does not answer: the caller skips.
"""

import base64
import json
import os
import select
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60


class Browser:
    def __init__(self, chromium, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def descriptors():
            # Chromium reads commands on fd 3 and writes replies on fd 4. Moved out of the way
            # first, in case a pipe end already is 3 or 4.
            high_r, high_w = os.dup(to_chrome_r) + 100, os.dup(from_chrome_w) + 100
            os.dup2(to_chrome_r, high_r)
            os.dup2(from_chrome_w, high_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [chromium, "--headless=new", "--disable-gpu", "--no-sandbox",
                "--remote-debugging-pipe", "--user-data-dir=" + profile, "--no-first-run",
                "--no-default-browser-check", "--hide-scrollbars", "--window-size=1400,1000",
                "about:blank"]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, preexec_fn=descriptors,
                                        close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def open_tab(self):
        """A blank tab of 1400 x 1000 attached, its pages, scripts and logs followed; False (said
        on stderr) when Chromium could not be started or does not answer."""
        try:
            target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
            attached = self.send("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True}, session=False)
        except (TimeoutError, EOFError, OSError) as e:
            print("chromium could not be started or does not answer: " + str(e), file=sys.stderr)
            return False
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        return True

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=5)
        except Exception:  # already gone: nothing to close
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise EOFError("the browser closed its end of the pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method, params=None, session=None, timeout=TIMEOUT_S):
        """Sends a command (to the page's session unless session is False) and returns its
        result; events that arrive meanwhile are kept in self.events."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session is None and self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(method + ": " + json.dumps(reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method, timeout=TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event["method"] == method:
                    return self.events.pop(i)
            reply = self._read_message(deadline)
            if "method" in reply:
                self.events.append(reply)

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError("evaluating failed: " + json.dumps(result["exceptionDetails"]))
        return result["result"].get("value")

    def load(self, url, drawn=True):
        """Navigates and waits for the load, and (drawn) for the page's script to finish."""
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        if not drawn:
            return
        deadline = time.monotonic() + TIMEOUT_S
        while self.evaluate("document.body && document.body.dataset.ready") != "1":
            if time.monotonic() > deadline:
                raise TimeoutError("the page never finished drawing (data-ready unset)")
            time.sleep(0.05)

    def errors(self):
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append("exception: " + details.get("exception", {}).get(
                    "description", details.get("text", "")))
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") in (
                    "error", "assert"):
                found.append("console." + params["type"] + ": " + " ".join(
                    str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif event["method"] == "Log.entryAdded" and params.get("entry", {}).get(
                    "level") == "error":
                found.append("log: " + params["entry"].get("text", ""))
        return found


# What the page shows for the moment selected in the first device's panel.
MOMENT = """(() => {
  const panel = document.querySelector('.moment');
  const site = panel.querySelector('.site');
  return {
    marker: panel.dataset.marker,
    time_ns: Number(panel.dataset.timeNs),
    heading: panel.querySelector('h4') ? panel.querySelector('h4').textContent : '',
    site_bytes: site ? Number(site.dataset.bytes) : null,
    site_function: site ? site.dataset.function : null,
    site_text: site ? site.textContent : '',
  };
})()"""


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    chromium, page, screenshot = sys.argv[1:]
    url = "file://" + os.path.abspath(page)
    with tempfile.TemporaryDirectory(prefix="gmt-chromium-") as profile:
        browser = Browser(chromium, profile)
        try:
            if not browser.open_tab():
                return 77
            browser.load(url)

            out = {}
            out["chart"] = browser.evaluate("""(() => {
              const c = document.querySelector('.chart');
              return {drawn_peak_bytes: Number(c.dataset.peakBytes),
                      model_peak_bytes: Number(c.dataset.modelPeakBytes),
                      stack_by: c.dataset.stackBy,
                      above_scale: c.dataset.aboveScale,
                      layers: [...c.querySelectorAll('.legend [data-layer]')]
                                .map((k) => k.dataset.layer),
                      role_rows: document.querySelectorAll('table.roles tr[data-role]').length,
                      module_rows: document.querySelectorAll('table.modules tr[data-module]').length,
                      phase_headers: [...document.querySelectorAll('table.phases th')]
                                       .map((h) => h.textContent),
                      charts: document.querySelectorAll('.chart').length};
            })()""")
            out["flame_total"] = browser.evaluate(
                "Number(document.querySelector('.flame').dataset.totalBytes)")
            # Where the peak is drawn, in the viewport's coordinates.
            where = browser.evaluate("""(() => {
              const c = window.gmtReport.charts[0];
              c.root.scrollIntoView();
              const r = c.overlay.getBoundingClientRect();
              return {x: r.left + c.xOf(c.device.peak_time_ns), y: r.top + r.height / 2,
                      peak_time_ns: c.device.peak_time_ns};
            })()""")
            mouse = {"x": where["x"], "y": where["y"], "button": "left", "clickCount": 1}
            browser.send("Input.dispatchMouseEvent", dict(mouse, type="mouseMoved", button="none"))
            out["tooltip"] = browser.evaluate("document.querySelector('.tooltip').textContent")
            browser.send("Input.dispatchMouseEvent", dict(mouse, type="mousePressed"))
            browser.send("Input.dispatchMouseEvent", dict(mouse, type="mouseReleased"))
            out["click"] = browser.evaluate(MOMENT)
            out["peak_time_ns"] = where["peak_time_ns"]

            screenshot_size = browser.evaluate(
                "({w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight})")
            shot = browser.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": screenshot_size["w"],
                         "height": min(screenshot_size["h"], 4000), "scale": 1}})
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))

            # A fresh load with the moment in the address (from the same page, only the fragment
            # would change, and the page would not load again).
            browser.load("about:blank", drawn=False)
            browser.load(url + "#click=" + str(where["peak_time_ns"]))
            out["fragment"] = browser.evaluate(MOMENT)
            out["errors"] = browser.errors()
            print(json.dumps(out))
            return 0
        finally:
            browser.close()


if __name__ == "__main__":
    sys.exit(main())
