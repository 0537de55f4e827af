"""Open every page of the built book in headless Chromium, as a reader at 1280 px would,
with the network cut, and report what a reader would find broken.

Used by ``scripts/check-book`` (which builds the HTML first); see its header. For each
page of ``_toc.yml`` this fails on:

- the page missing from the build;
- a code cell (its source or its printed output) wider than its column: a line the
  reader would have to scroll sideways to read;
- a display equation wider than its column, or math that MathJax did not render;
- a table wider than the text column (a wide table must scroll inside its own box);
- anything else running past the column (an image, a figure, a cell, a paragraph)
  outside a scroll box, and the page itself scrolling sideways;
- an image that does not load;
- any request that leaves the machine (every http/https/ws request is blocked and
  reported: the book must render from its own files);
- a row of "Claims at a glance" whose number differs from what its linked cell prints;
- a numbered figure without its files (PDF, SVG, PNG, shipped with the build), the
  command that regenerates it and its citation (``_ext/figures.py``).

It writes what a reader sees first on each page (the first 1280 x 900 px) to
``<screenshots>/<page>.png`` and every finding to ``<screenshots>/report.json``.
Chromium is driven over the DevTools protocol (websocket-client); no driver binary
needed.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlparse

import websocket

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "_ext"))
import ledgers  # noqa: E402  (the _toc.yml walker the book's extensions use)

WIDTH, HEIGHT = 1280, 900
LOCAL_SCHEMES = {"file", "data", "blob", "about", "chrome", "devtools"}
BLOCKED = ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]
PAGE_TIMEOUT = (
    240  # seconds for one page to load and render (a busy 2-core machine is slow)
)

# Runs in the page; returns the findings as a list of strings.
CHECKS_JS = r"""
(() => {
  const out = [];
  const snip = (s) => (s || "").replace(/\s+/g, " ").trim().slice(0, 70);
  const article = document.querySelector("article.bd-article") || document.body;
  const col = article.getBoundingClientRect();
  const visible = (el) => el.offsetParent !== null && el.getClientRects().length > 0;
  const where = (el) => {
    const sec = el.closest("section[id]");
    return sec ? ` (in #${sec.id})` : "";
  };
  // code cells: source and printed output must fit their box (no sideways scrolling)
  for (const pre of article.querySelectorAll("div.cell_input pre, div.cell_output pre")) {
    if (!visible(pre) || pre.classList.contains("revlib-claim")) continue;
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const kind = pre.closest("div.cell_input") ? "code cell" : "code cell output";
      const lines = pre.innerText.split("\n");
      const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), "");
      out.push(`${kind} wider than its column (${pre.scrollWidth} px in ${pre.clientWidth} px)` +
               `${where(pre)}: ${snip(longest)}`);
    }
  }
  // claim lines wrap: they must not overflow either
  for (const pre of article.querySelectorAll("pre.revlib-claim")) {
    if (visible(pre) && pre.scrollWidth > pre.clientWidth + 1)
      out.push(`claim line wider than its column${where(pre)}: ${snip(pre.innerText)}`);
  }
  // display equations
  for (const mjx of article.querySelectorAll('mjx-container[display="true"]')) {
    if (!visible(mjx)) continue;
    const math = mjx.querySelector("mjx-math");
    const w = math ? math.getBoundingClientRect().width : mjx.scrollWidth;
    const box = mjx.parentElement.getBoundingClientRect();
    const avail = Math.min(box.width, col.width);
    if (w > avail + 1)
      out.push(`equation wider than its column (${Math.round(w)} px in ${Math.round(avail)} px)` +
               `${where(mjx)}: ${snip(mjx.parentElement.getAttribute("data-tex") ||
                                     (mjx.querySelector("mjx-assistive-mml") || mjx).textContent)}`);
  }
  // math MathJax left as TeX (it did not load, or the TeX is broken)
  for (const el of article.querySelectorAll(".math")) {
    if (!el.querySelector("mjx-container") && /\\\(|\\\[|\$\$/.test(el.textContent))
      out.push(`math not rendered${where(el)}: ${snip(el.textContent)}`);
  }
  for (const err of article.querySelectorAll("mjx-merror"))
    out.push(`MathJax error${where(err)}: ${snip(err.getAttribute("data-mjx-error") || err.textContent)}`);
  // the nearest ancestor (inside the article) that scrolls or clips sideways, if any
  const scroller = (el) => {
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === "auto" || ox === "scroll" || ox === "hidden") return a;
    }
    return null;
  };
  const inScroller = (el) => scroller(el) !== null;
  // tables: wider than the column is a failure; scrolling inside their own box is fine
  for (const t of article.querySelectorAll("table")) {
    if (!visible(t)) continue;
    const box = t.scrollWidth > t.clientWidth + 1 && getComputedStyle(t).overflowX !== "visible"
      ? t : (scroller(t) || t);   // what the reader sees: the table, or its scroll box
    const r = box.getBoundingClientRect();
    if (r.right > col.right + 1 || r.width > col.width + 1)
      out.push(`table wider than its column (${Math.round(r.width)} px in ${Math.round(col.width)} px)` +
               `${where(t)}: ${snip(t.innerText)}`);
  }
  // anything else poking out of the column (an image, a figure, a box, a long word)
  for (const el of article.querySelectorAll(
      "img, figure, div.cell, div.admonition, div.proof, p, li, dl, blockquote")) {
    if (!visible(el) || inScroller(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.right > col.right + 1)
      out.push(`${el.tagName.toLowerCase()} runs past the column by ${Math.round(r.right - col.right)} px` +
               `${where(el)}: ${snip(el.innerText || el.getAttribute("src"))}`);
  }
  // the page scrolling sideways
  const se = document.scrollingElement;
  if (se.scrollWidth > window.innerWidth + 1)
    out.push(`the page scrolls sideways (${se.scrollWidth} px in ${window.innerWidth} px)`);
  // images
  for (const img of document.querySelectorAll("img")) {
    if (!img.complete || img.naturalWidth === 0)
      out.push(`image does not load: ${img.getAttribute("src")}`);
  }
  // figures: files, command, citation
  const figs = [];
  for (const fig of article.querySelectorAll("figure[id^='fig-']")) {
    const box = fig.querySelector(".revlib-figure-files");
    const links = box ? [...box.querySelectorAll("a")].map((a) => a.href) : [];
    const text = box ? box.innerText : "";
    const ok = links.length === 3 && ["pdf", "svg", "png"].every((f, i) =>
      links[i].endsWith(`/${fig.id}.${f}`)) && text.includes(`python -m revlib figure ${fig.id}`)
      && /commit/.test(text);
    if (!ok) out.push(`figure ${fig.id} has no download links, command and citation`);
    figs.push({id: fig.id, links});
  }
  return JSON.stringify({findings: out, figures: figs});
})()
"""  # noqa: E501 (JavaScript, not Python)

WAIT_JS = r"""
(async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  for (const img of document.querySelectorAll("img")) img.loading = "eager";
  await Promise.race([Promise.all([...document.images].map((i) => i.decode().catch(() => null))),
                      sleep(5000)]);
  const mathjax = [...document.scripts].some((s) => /mathjax/i.test(s.src));
  for (let i = 0; mathjax && i < 200 && !(window.MathJax && MathJax.startup &&
                                          MathJax.startup.promise); i++)
    await sleep(25);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise)
    await Promise.race([MathJax.startup.promise, sleep(20000)]);
  if (document.fonts) await Promise.race([document.fonts.ready, sleep(3000)]);
  return true;
})()
"""  # noqa: E501 (JavaScript, not Python)


class CDP:
    """A minimal DevTools-protocol client on one page target."""

    def __init__(self, ws_url: str):
        self.ws = websocket.create_connection(
            ws_url, timeout=PAGE_TIMEOUT, suppress_origin=True
        )
        self.next_id = 0
        self.events: list[dict] = []

    def send(
        self, method: str, params: dict | None = None, timeout: float = 60
    ) -> dict:
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        end = time.time() + timeout
        self.ws.settimeout(timeout)
        while time.time() < end:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
        raise TimeoutError(method)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events.pop(i)
        end = time.time() + timeout
        self.ws.settimeout(timeout)
        while time.time() < end:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)
        raise TimeoutError(method)

    def evaluate(self, expr: str, timeout: float = 60):
        res = self.send(
            "Runtime.evaluate",
            {"expression": expr, "awaitPromise": True, "returnByValue": True},
            timeout=timeout,
        )
        if "exceptionDetails" in res:
            raise RuntimeError(f"page script failed: {res['exceptionDetails']}")
        return res["result"].get("value")


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if path := shutil.which(name):
            return path
    raise SystemExit("check-book: no chromium on PATH (apt-get install chromium)")


def start_browser(profile: Path) -> tuple[subprocess.Popen, str]:
    cmd = [
        find_chromium(),
        "--headless=new",
        "--remote-debugging-port=0",
        "--remote-allow-origins=*",
        f"--user-data-dir={profile}",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-features=Translate,OptimizationHints,MediaRouter",
        "--hide-scrollbars",
        "--mute-audio",
        f"--window-size={WIDTH},{HEIGHT}",
        "--allow-file-access-from-files",
        "about:blank",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = profile / "DevToolsActivePort"
    for _ in range(300):
        if port_file.exists() and port_file.read_text().strip():
            break
        if proc.poll() is not None:
            raise SystemExit(f"check-book: chromium exited ({proc.returncode})")
        time.sleep(0.1)
    port = port_file.read_text().split()[0]
    for _ in range(50):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as r:
                pages = [t for t in json.load(r) if t["type"] == "page"]
            if pages:
                return proc, pages[0]["webSocketDebuggerUrl"]
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("check-book: chromium's DevTools endpoint did not answer")


def toc_pages() -> list[str]:
    return ledgers.toc_docs()


def scorecard_disagreements(html: Path) -> list[str]:
    """Rows of "Claims at a glance" whose number is not what their linked cell prints:
    the page and the cells must come from the same run of each notebook."""
    from bs4 import BeautifulSoup

    page = html / "book" / "claims.html"
    if not page.is_file():
        return [f"page missing from the build: {page}"]
    soup = BeautifulSoup(page.read_text(), "html.parser")
    cells: dict[Path, BeautifulSoup] = {}
    out = []
    for table in soup.select("table.revlib-scorecard"):
        head = [th.get_text(" ", strip=True) for th in table.select("thead th")]
        ours_col = head.index("ours")
        for tr in table.select("tbody tr"):
            tds = tr.find_all("td")
            link = tds[-1].find("a")
            target, _, anchor = link["href"].partition("#")
            path = (page.parent / unquote(target)).resolve()
            if path not in cells:
                cells[path] = BeautifulSoup(path.read_text(), "html.parser")
            line = cells[path].find(id=anchor)
            ours = tds[ours_col].get_text(" ", strip=True)
            ours = ours.split(" (")[0] if ours.endswith("seeds)") else ours
            if line is None:
                out.append(f"scorecard row {anchor}: no cell with that id in {target}")
            elif ours not in line.get_text(" ", strip=True):
                out.append(
                    f"scorecard row {anchor} reads {ours!r}, its cell prints "
                    f"{line.get_text(' ', strip=True)[:160]!r}"
                )
    return out


def check_page(cdp: CDP, html: Path, page: str, shots: Path) -> dict:
    cdp.events.clear()
    cdp.send("Page.navigate", {"url": html.as_uri()}, timeout=PAGE_TIMEOUT)
    cdp.wait_event("Page.loadEventFired", timeout=PAGE_TIMEOUT)
    cdp.evaluate(WAIT_JS, timeout=PAGE_TIMEOUT)
    result = json.loads(cdp.evaluate(CHECKS_JS, timeout=PAGE_TIMEOUT))
    findings = result["findings"]
    # figure files: every link must point at a file shipped with the build
    for fig in result["figures"]:
        for link in fig["links"]:
            target = Path(unquote(urlparse(link).path))
            if not target.is_file():
                findings.append(
                    f"figure {fig['id']}: {target.name} is not in the build"
                )
    # requests: anything not local left (or tried to leave) the machine
    cdp.send("Runtime.evaluate", {"expression": "1"})  # flush pending events
    for ev in cdp.events:
        if ev["method"] == "Network.requestWillBeSent":
            url = ev["params"]["request"]["url"]
            if urlparse(url).scheme not in LOCAL_SCHEMES:
                findings.append(f"request leaves the machine: {url[:120]}")
        elif ev["method"] == "Network.loadingFailed":
            p = ev["params"]
            if (
                p.get("blockedReason") is None
                and p.get("errorText") != "net::ERR_ABORTED"
            ):
                findings.append(
                    f"resource failed to load: {p.get('errorText')} "
                    f"({p.get('type')}, request {p.get('requestId')})"
                )
    shot = cdp.send("Page.captureScreenshot", {"format": "png"}, timeout=PAGE_TIMEOUT)
    name = page.replace("/", "__") + ".png"
    (shots / name).write_bytes(base64.b64decode(shot["data"]))
    return {
        "page": page,
        "findings": list(dict.fromkeys(findings)),
        "figures": [f["id"] for f in result["figures"]],
        "screenshot": str(shots / name),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--html", default="_build/check-book/_build/html", help="built book"
    )
    ap.add_argument(
        "--screenshots", default="_build/screenshots", help="folder for PNGs"
    )
    ap.add_argument(
        "pages", nargs="*", help="pages to check (default: every page of _toc.yml)"
    )
    args = ap.parse_args()
    html = (ROOT / args.html).resolve()
    shots = (ROOT / args.screenshots).resolve()
    shots.mkdir(parents=True, exist_ok=True)
    if (
        not args.pages
    ):  # a full run replaces every screenshot; a partial one only its own
        for old in shots.glob("*.png"):
            old.unlink()
    pages = args.pages or toc_pages()
    report, failed = [], 0
    if not args.pages or "book/claims" in args.pages:
        problems = scorecard_disagreements(html)
        print(
            "book/claims: every row agrees with its cell"
            if not problems
            else f"book/claims: {len(problems)} rows disagree with their cells"
        )
        for line in problems[:40]:
            print(f"    {line}")
        report.append(
            {"page": "book/claims (rows against cells)", "findings": problems}
        )
        failed += bool(problems)
    with tempfile.TemporaryDirectory(
        prefix="check-book-", ignore_cleanup_errors=True
    ) as profile:
        proc, ws_url = start_browser(Path(profile))
        try:
            cdp = CDP(ws_url)
            cdp.send("Network.enable")
            cdp.send("Network.setBlockedURLs", {"urls": BLOCKED})
            cdp.send("Page.enable")
            cdp.send(
                "Emulation.setDeviceMetricsOverride",
                {
                    "width": WIDTH,
                    "height": HEIGHT,
                    "deviceScaleFactor": 1,
                    "mobile": False,
                },
            )
            for page in pages:
                path = html / f"{page}.html"
                if not path.is_file():
                    rec = {
                        "page": page,
                        "findings": [f"page missing from the build: {path}"],
                        "figures": [],
                        "screenshot": None,
                    }
                else:
                    start = time.time()
                    rec = check_page(cdp, path, page, shots)
                    rec["seconds"] = round(time.time() - start, 1)
                report.append(rec)
                status = (
                    "ok"
                    if not rec["findings"]
                    else f"{len(rec['findings'])} problem(s)"
                )
                print(
                    f"{page}: {status}"
                    + (f", {len(rec['figures'])} figures" if rec["figures"] else "")
                    + (f" ({rec['seconds']} s)" if "seconds" in rec else "")
                )
                for line in rec["findings"]:
                    print(f"    {line}")
                failed += bool(rec["findings"])
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    (shots / "report.json").write_text(json.dumps(report, indent=1))
    print(f"==> {len(pages)} pages, {failed} with problems; screenshots in {shots}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
