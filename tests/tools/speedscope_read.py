#!/usr/bin/env python3
"""What speedscope made of a page's profile, read back from headless Chromium.

Usage: speedscope_read.py URL EXPORT.json [SCREENSHOT.png] [TIMEOUT_S]
EXPORT.json '-': no export, only whether (and when) a profile is shown.

Drives Debian's chromium over the DevTools protocol (--remote-debugging-pipe:
NUL-terminated JSON on fds 3 and 4, no library needed), loads URL (mt-view's
page), waits until speedscope shows a profile, then presses speedscope's own
Export button: the file it saves (captured where the page makes its blob) is
speedscope's model of every profile it imported, as evented O/C events
(src/lib/file-format.ts, exportProfileGroup). Writes that to EXPORT.json,
the page as it looks to SCREENSHOT.png, and on stderr every console message,
alert and uncaught exception of the page. Exit 0: a profile was shown and
exported; 1: none (an alert, an exception, or nothing within TIMEOUT_S,
default 60; speedscope's "Something went wrong" page is a failure too);
2: usage or no browser. Test instrument.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

HOOK = """
window.__mtExported = null;
(() => {
  const make = URL.createObjectURL.bind(URL);
  URL.createObjectURL = (blob) => {
    if (blob && blob.text) blob.text().then(t => { window.__mtExported = t; });
    return make(blob);
  };
})();
"""

# the toolbar's Export tab (an emoji's span, then the word), once a profile is shown
FIND_EXPORT = """
(() => {
  for (const e of document.querySelectorAll('div'))
    for (const n of e.childNodes)
      if (n.nodeType === Node.TEXT_NODE && n.textContent.trim() === 'Export') return e;
  return null;
})()
"""


class Browser:
    def __init__(self, timeout):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            print("speedscope_read: no chromium", file=sys.stderr)
            sys.exit(2)
        self.tmp = tempfile.mkdtemp(prefix="mt-chrome.")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--user-data-dir=" + self.tmp, "--window-size=1400,900", "about:blank"],
            # the child's fds 3 and 4, made in preexec_fn, are the ones kept
            preexec_fn=fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.deadline = time.monotonic() + timeout

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read_one(self, wait):
        while b"\0" not in self.buf:
            r, _, _ = select.select([self.from_chrome], [], [], wait)
            if not r:
                return None
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium exited")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        i = self.send(method, params, session)
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(method)
            m = self.read_one(left)
            if m is None:
                raise TimeoutError(method)
            if m.get("method") == "Page.javascriptDialogOpening":
                # an alert stops the page's scripts (and this call) until closed
                self.send("Page.handleJavaScriptDialog", {"accept": True}, m.get("sessionId"))
                m = {"method": "mt.dialog", "params": m["params"]}
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def pump(self, wait):
        m = self.read_one(wait)
        if m is not None:
            self.events.append(m)

    def close(self):
        try:
            self.send("Browser.close")
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    url, out = sys.argv[1], sys.argv[2]
    shot = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    b = Browser(timeout)
    failed = []
    try:
        target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for d in ("Page", "Runtime", "Log"):
            b.call(d + ".enable", session=s)
        b.call("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK}, session=s)
        start = time.monotonic()
        b.call("Page.navigate", {"url": url}, session=s)

        def evaluate(expr, by_value=True):
            r = b.call("Runtime.evaluate", {"expression": expr, "returnByValue": by_value,
                                            "awaitPromise": True}, session=s)
            return r.get("result", {})

        seen = 0
        shown = False
        exported = None
        while time.monotonic() < b.deadline:
            b.pump(0.2)
            for m in b.events[seen:]:
                meth, p = m.get("method"), m.get("params", {})
                if meth == "Runtime.consoleAPICalled":
                    text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                    print(f"console.{p.get('type')}: {text}", file=sys.stderr)
                    if text.startswith("Failed to load format"):  # speedscope's import failed
                        failed.append(text)
                elif meth == "Runtime.exceptionThrown":
                    d = p.get("exceptionDetails", {})
                    text = d.get("exception", {}).get("description") or d.get("text")
                    print(f"exception: {text}", file=sys.stderr)
                    failed.append(text)
                elif meth in ("Page.javascriptDialogOpening", "mt.dialog"):
                    print(f"alert: {p.get('message')}", file=sys.stderr)
                    failed.append(p.get("message"))
                    if meth == "Page.javascriptDialogOpening":
                        b.send("Page.handleJavaScriptDialog", {"accept": True}, session=s)
            seen = len(b.events)
            if failed:
                break
            if evaluate("document.body !== null && document.body.innerText.includes('Something went wrong')").get("value"):
                print("speedscope: Something went wrong.", file=sys.stderr)
                failed.append("Something went wrong")
                break
            if not shown:
                if evaluate(FIND_EXPORT + " !== null").get("value"):
                    shown = True
                    print(f"speedscope_read: profile shown after {time.monotonic() - start:.1f} s", file=sys.stderr)
                    if out == "-":
                        exported = "-"
                        break
                    evaluate(FIND_EXPORT + ".click()")
                continue
            exported = evaluate("window.__mtExported").get("value")
            if exported:
                break
        if shot:
            try:
                data = b.call("Page.captureScreenshot", {"format": "png"}, session=s)["data"]
                with open(shot, "wb") as f:
                    f.write(base64.b64decode(data))
            except (TimeoutError, RuntimeError) as e:
                print(f"speedscope_read: no screenshot: {e}", file=sys.stderr)
        if not exported:
            if not failed:
                print("speedscope_read: no profile shown (or exported) in time", file=sys.stderr)
            return 1
        if out != "-":
            with open(out, "w") as f:
                f.write(exported)
        return 0
    except TimeoutError as e:
        print(f"speedscope_read: timed out ({e})", file=sys.stderr)
        return 1
    finally:
        b.close()


if __name__ == "__main__":
    sys.exit(main())
