"""The notebooks as a reader meets them: JupyterLab 4 in Debian's Chromium, driven by selenium.

One JupyterLab server (127.0.0.1, a free port, no token) serves temporary copies of the
notebooks, with ``LABKIT_QUICK=1`` and ``LABKIT_OUT`` set in its environment (its kernels
inherit both), and its own settings, workspaces, runtime and data folders, so nothing of the
user's and nothing in the repository is touched.  One headless Chromium (``/usr/bin/chromium``
through ``/usr/bin/chromedriver``: nothing downloads a browser or a driver) opens each
``notebooks/NN-*.ipynb`` and:

* **opening changes nothing**: a copy of the stored file is opened; once its kernel is idle
  the document is not dirty, and saving it writes the very bytes stored in the repository;
* **it runs clean**: another copy is run top to bottom (the Run All command of the Run menu);
  no output is an error or stderr (in the notebook model and on the page), and every image
  on the page has loaded (``naturalWidth > 0``);
* in **notebook 01**, the stepper's slider is dragged with the mouse and ``advance`` is
  clicked: the line under the controls names the new step and the drawing changes;
* **the stored notebook 01, trusted**, shows no "Error displaying widget": JupyterLab renders
  widget views only in trusted notebooks, and the stored file keeps none (only the controls'
  line of text and the drawing);
* **the drawings survive a save**: the notebook is saved, closed with its kernel shut down and
  reopened with a fresh kernel: every figure is still an image that loads, no output says
  "Error displaying widget", and notebook 01 shows the stepper's last drawing (reopened once
  more with no kernel at all: still there).

The report page (``index.html`` of a reproduction holding the stored reference summary) is
opened at 1,280 and 1,920 px: the page does not scroll sideways, the summary table fits its
width and no row is taller than 330 px with its details closed (``report-1280.png``,
``report-1920.png``).

A screenshot of each notebook after Run All (``NN-name.png``, taken before the checks, so it
shows a failure too), of each cell with a figure (``NN-name-cellKK.png``, to look at) and
of notebook 01's stepper after the step, reopened, and reopened with no kernel
(``-stepped``, ``-reopened``, ``-no-kernel``) go to ``tests/artifacts/browser/`` (ignored
by git); the paths are printed.  Every process the test started (the server, its
kernels, chromedriver and Chromium) is stopped by its process id at the end.  Where Chromium,
chromedriver or selenium is missing the tests skip, naming the command that installs them.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
ARTIFACTS = ROOT / "tests" / "artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL = "apt-get install -y chromium chromium-driver"
TOUR = "01-iov-iter-tour.ipynb"
#: Seconds allowed for: the server to answer, a notebook to open, all its cells to run.
START_TIMEOUT, OPEN_TIMEOUT, RUN_TIMEOUT = 120, 90, 600


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            return f"{path} is missing: install Chromium with `{INSTALL}`"
    try:
        import jupyterlab  # noqa: F401
        import selenium  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is missing: pip install -e '.[lab,test]'"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]


# ---- processes: started here, stopped here, by pid -----------------------------------------


def _children(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        found += kids
        frontier += kids
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    try:
        return state.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop(proc: subprocess.Popen, extra: list[int]) -> list[int]:
    """SIGTERM ``proc`` (it shuts its kernels down), then SIGKILL whatever of ``proc``,
    its descendants and ``extra`` still lives.  Returns the pids that had to be killed."""
    pids = [*_children(proc.pid), *extra]
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    killed = []
    deadline = time.monotonic() + 5
    for pid in pids:
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the server and the browser ------------------------------------------------------------


@dataclass
class Lab:
    """A running JupyterLab: its URL, the folder it serves and its process."""

    url: str
    root: Path
    proc: subprocess.Popen
    log: Path


#: Settings of the test's own JupyterLab (its user-settings folder is a temporary one):
#: no news, no update check, every cell laid out (so every image can be checked).
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab")
    root = base / "served"
    root.mkdir()
    settings = base / "settings"
    for name, value in SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(value))
    env = dict(os.environ)
    env.update(
        LABKIT_QUICK="1",
        LABKIT_OUT=str(base / "labkit-out"),
        LABKIT_DATA=str(base / "labkit-data"),
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_DATA_DIR=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        IPYTHONDIR=str(base / "ipython"),
        MPLBACKEND="module://matplotlib_inline.backend_inline",
    )
    env.pop("JUPYTER_PATH", None)
    port = _free_port()
    log = base / "jupyterlab.log"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        "--ServerApp.terminals_enabled=False",
    ]
    if os.geteuid() == 0:  # a container's root: JupyterLab wants to be told
        cmd.append("--allow-root")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Lab(url, root, proc, log)
    finally:
        _stop(proc, [])


@contextmanager
def chromium(width: int, log: str | None = None) -> Iterator[Any]:
    """A headless Chromium driven by chromedriver, ``width`` x 1,000 px at scale 1; the
    driver and every browser process it started are gone when the block ends."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container
        "--disable-dev-shm-usage",
        f"--window-size={width},1000",
        "--force-device-scale-factor=1",
    ):
        opts.add_argument(arg)
    service = Service(executable_path=str(CHROMEDRIVER), log_output=log)
    driver = webdriver.Chrome(service=service, options=opts)
    driver_pid = service.process.pid
    chrome = _children(driver_pid)
    try:
        yield driver
    finally:
        try:
            driver.quit()
        finally:
            for pid in [*chrome, driver_pid]:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    with chromium(1400, log=str(lab.log) + ".driver") as driver:
        driver.set_script_timeout(RUN_TIMEOUT)
        driver.get(f"{lab.url}/lab?reset")
        _wait(driver, "return !!(window.jupyterapp && window.jupyterapp.shell)", START_TIMEOUT)
        driver.execute_async_script(
            "const done = arguments[0]; window.jupyterapp.restored.then(() => done(true));"
        )
        yield driver


def _wait(driver: Any, script: str, timeout: float, what: str = "", *args: Any) -> Any:
    """Poll ``script`` (called with ``args``) until it returns something true."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script, *args)
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what or script}")
        time.sleep(0.25)


# ---- JupyterLab, through its own commands (what its menus call) ----------------------------

JS_PANEL = """
const app = window.jupyterapp;
const panel = Array.from(app.shell.widgets('main'))
  .find(w => w.context && w.context.path === arguments[0]);
"""


def open_notebook(driver: Any, path: str, *, kernel: bool = True) -> None:
    """Open ``path`` (relative to the served folder) and wait until its kernel is idle (or,
    with ``kernel=False``, open it with no kernel and wait until its cells are shown)."""
    args = {"path": path} if kernel else {"path": path, "kernelPreference": {"shouldStart": False}}
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.jupyterapp.commands.execute('docmanager:open', arguments[0])"
        ".then(() => done(true), e => done(String(e)));",
        args,
    )
    ready = "panel && panel.context.isReady && panel.content.widgets.length > 0"
    if kernel:
        ready += (
            " && panel.sessionContext.session && panel.sessionContext.session.kernel"
            " && panel.sessionContext.session.kernel.status === 'idle'"
        )
    what = f"{path} to open " + ("with an idle kernel" if kernel else "without a kernel")
    _wait(driver, JS_PANEL + f"return !!({ready});", OPEN_TIMEOUT, what, path)


def panel_call(driver: Any, path: str, body: str, *args: Any) -> Any:
    """Run async ``body`` (it sees ``app``, ``panel`` and ``args``; its value is returned)."""
    script = (
        "const done = arguments[arguments.length - 1];"
        + JS_PANEL
        + "const args = arguments[1];"
        + "(async () => {"
        + body
        + "})().then(v => done({ok: v}), e => done({error: String(e && e.stack || e)}));"
    )
    result = driver.execute_async_script(script, path, list(args))
    if "error" in result:
        pytest.fail(f"in JupyterLab ({path}): {result['error']}")
    return result.get("ok")


def run_all(driver: Any, path: str) -> None:
    panel_call(
        driver,
        path,
        "app.shell.activateById(panel.id);"
        "await app.commands.execute('notebook:run-all-cells');"
        "const k = panel.sessionContext.session.kernel;"
        "while (k.status !== 'idle') await new Promise(r => setTimeout(r, 200));",
    )


def save(driver: Any, path: str) -> None:
    panel_call(driver, path, "await panel.context.save();")


def close(driver: Any, path: str) -> None:
    """Shut the notebook's kernel down and close its tab (the document must be saved)."""
    panel_call(
        driver,
        path,
        "if (panel.context.model.dirty) throw new Error('unsaved changes');"
        "await panel.sessionContext.shutdown(); panel.close();"
        "while (!panel.isDisposed) await new Promise(r => setTimeout(r, 100));",
    )


def cells(driver: Any, path: str) -> list[dict[str, Any]]:
    """Every cell of the open notebook: its type, source, execution count and outputs."""
    return panel_call(
        driver,
        path,
        "return panel.content.widgets.map(c => ({type: c.model.type,"
        " source: c.model.sharedModel.getSource(),"
        " count: c.model.type === 'code' ? c.model.executionCount : null,"
        " outputs: c.model.type === 'code' ? c.model.outputs.toJSON() : []}));",
    )


def page_state(driver: Any, path: str) -> dict[str, Any]:
    """What the page shows: images (loaded or not, per cell), stderr and widget errors."""
    return panel_call(
        driver,
        path,
        """
        const digest = t => {  // FNV-1a of the whole source (a data: URI), and its length
          let h = 0x811c9dc5;
          for (let i = 0; i < t.length; i++) h = Math.imul(h ^ t.charCodeAt(i), 16777619);
          return t.length + ':' + (h >>> 0).toString(16);
        };
        const imgs = [];
        panel.content.widgets.forEach((c, k) => {
          c.node.querySelectorAll('.jp-OutputArea-output img').forEach(img => imgs.push(
            {cell: k, loaded: img.complete && img.naturalWidth > 0, width: img.naturalWidth,
             src: digest(img.src)}));
        });
        const text = sel => Array.from(panel.node.querySelectorAll(sel)).map(n => n.innerText);
        const stderr = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]';
        return {images: imgs,
                stderr: text(stderr),
                widgets: panel.content.widgets.flatMap((c, k) => Array.from(
                  c.node.querySelectorAll('.jp-OutputArea-output')).map(n => ({cell: k,
                  text: n.innerText.trim()})).filter(o =>
                  /^(Error displaying widget|Loading widget)/.test(o.text))),
                dirty: panel.context.model.dirty};
        """,
    )


def wait_images(driver: Any, path: str, timeout: float = 30) -> dict[str, Any]:
    """The page state once every image has loaded (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while True:
        state = page_state(driver, path)
        if all(i["loaded"] for i in state["images"]) or time.monotonic() > deadline:
            return state
        time.sleep(0.25)


def screenshot(driver: Any, path: str, name: str, cell: int | None = None) -> Path:
    """Save a screenshot with ``cell`` (default: the first figure or summary table) in view."""
    panel_call(
        driver,
        path,
        """
        const k = args[0];
        const first = '.jp-OutputArea-output img, .jp-OutputArea-output table.summary';
        const node = k === null ? panel.node.querySelector(first) : panel.content.widgets[k].node;
        if (node) node.scrollIntoView({block: 'start'});
        await new Promise(r => setTimeout(r, 300));
        """,
        cell,
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dest = ARTIFACTS / name
    driver.save_screenshot(str(dest))
    print(f"screenshot: {dest}")
    return dest


# ---- the tests ------------------------------------------------------------------------------


def _problems(cell_list: list[dict[str, Any]]) -> list[str]:
    """Error and stderr outputs, and figures shown as text ("<Figure size ...>", no image)."""
    found = []
    for k, cell in enumerate(cell_list):
        for out in cell["outputs"]:
            data = out.get("data", {})
            text = data.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            if text.startswith("<Figure size") and not any(m.startswith("image/") for m in data):
                found.append(f"cell {k}: a figure shown as text, not drawn: {text!r}")
            if out.get("output_type") == "error":
                found.append(f"cell {k}: error {out.get('ename')}: {out.get('evalue')}")
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = out.get("text")
                text = "".join(text) if isinstance(text, list) else str(text)
                found.append(f"cell {k}: stderr {text[:300]!r}")
    return found


@pytest.fixture(scope="module", params=NOTEBOOKS, ids=lambda p: p.name)
def nb(request: Any) -> Path:
    """Each notebook; module-scoped, so pytest runs both tests of one notebook in a row (the
    run test then continues in the tab the opening test left open)."""
    return request.param


def test_opening_changes_nothing(lab: Lab, browser: Any, nb: Path) -> None:
    """Open a copy of the stored file: not dirty once the kernel is idle, and a save writes
    the same bytes."""
    stored = nb.read_bytes()
    rel = f"work/{nb.name}"
    copy = lab.root / rel
    copy.parent.mkdir(exist_ok=True)
    copy.write_bytes(stored)
    open_notebook(browser, rel)
    time.sleep(1.0)  # the kernel's language_info has arrived by now
    dirty = page_state(browser, rel)["dirty"]
    save(browser, rel)  # left open: the run test goes on in this tab
    saved = copy.read_bytes()
    diff = difflib.unified_diff(
        stored.decode().splitlines(), saved.decode().splitlines(), "stored", "saved", n=1
    )
    assert saved == stored and not dirty, (
        f"{nb.name}: {'opening it marked it modified; ' if dirty else ''}"
        "JupyterLab writes it as:\n" + "\n".join(list(diff)[:80])
    )


def test_runs_clean_and_survives_a_save(lab: Lab, browser: Any, nb: Path) -> None:
    rel = f"work/{nb.name}"
    copy = lab.root / rel
    if not copy.exists():  # the opening test did not run (-k): a fresh copy
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(nb, copy)
    open_notebook(browser, rel)  # opens it, or brings its open tab to the front
    t0 = time.monotonic()
    run_all(browser, rel)
    seconds = time.monotonic() - t0
    ran = cells(browser, rel)
    state = wait_images(browser, rel)
    screenshot(browser, rel, f"{nb.stem}.png")  # before any check: shows what failed too
    for k in sorted({i["cell"] for i in state["images"]}):  # each figure, to look at
        screenshot(browser, rel, f"{nb.stem}-cell{k:02d}.png", k)
    code = [c for c in ran if c["type"] == "code"]
    assert not _problems(ran), f"{nb.name}: " + "; ".join(_problems(ran))
    idle = [k for k, c in enumerate(ran) if c["type"] == "code" and not c["count"]]
    assert code and not idle, f"{nb.name}: code cells {idle} did not run"
    assert not state["stderr"], f"{nb.name}: stderr on the page: {state['stderr']}"
    assert not state["widgets"], f"{nb.name}: widgets not shown: {state['widgets']}"
    images = state["images"]
    bad = [i for i in images if not i["loaded"]]
    assert not bad, f"{nb.name}: {len(bad)} of {len(images)} images did not load: {bad}"
    stored_figures = sum(
        1
        for c in json.loads(nb.read_text())["cells"]
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    )
    assert len(images) >= min(stored_figures, 1), f"{nb.name}: no figure on the page"
    print(f"{nb.name}: {len(code)} code cells ran in {seconds:.1f} s, {len(images)} images")
    prose = panel_call(
        browser,
        rel,
        "return panel.content.widgets.filter(c => c.model.type === 'markdown')"
        ".map(c => c.node.innerText);",
    )
    from labkit.run.notebook_files import intervals_in_prose

    stale = [hit for text in prose for hit in intervals_in_prose(text)]
    assert not stale, f"{nb.name}: measured intervals typed into the prose: {stale}"
    if "claims.start(" in nb.read_text():  # a measuring notebook says whose outputs these are
        page = panel_call(browser, rel, "return panel.content.node.innerText;")
        assert "the outputs below are from this run" in page, f"{nb.name}: no this-run line"
    wide = _tables_wider_than_the_page(browser, rel)
    assert not wide, f"{nb.name}: tables wider than the notebook: {wide}"
    extra: dict[str, Any] = {}
    if nb.name == TOUR:
        extra = _step_the_stepper(browser, rel)
        screenshot(browser, rel, f"{nb.stem}-stepped.png", extra["cell"])

    save(browser, rel)
    close(browser, rel)
    open_notebook(browser, rel)  # a fresh kernel: the old one was shut down
    state = wait_images(browser, rel)
    deadline = time.monotonic() + 20  # the widget manager settles: "Loading" becomes an error
    while any(w["text"].startswith("Loading") for w in state["widgets"]):
        if time.monotonic() > deadline:
            break
        time.sleep(0.25)
        state = page_state(browser, rel)
    # Only the stepper's controls may be missing after a reopen (the cell must run again
    # for them); its drawing, an ordinary output, must be there (checked below).
    missing = "Error displaying widget: model not found"
    allowed = [[], [{"cell": extra["cell"], "text": missing}]] if extra else [[]]
    assert state["widgets"] in allowed, f"{nb.name} reopened: {state['widgets']}"
    reopened = state["images"]
    assert all(i["loaded"] for i in reopened), f"{nb.name} reopened: an image did not load"
    assert len(reopened) == len(images), (
        f"{nb.name} reopened: {len(reopened)} images where {len(images)} were shown"
    )
    if extra:
        drawn = [i for i in reopened if i["cell"] == extra["cell"]]
        assert drawn and drawn[-1]["src"] == extra["after"], (
            f"{nb.name} reopened: the stepper's last drawing is not there"
        )
        screenshot(browser, rel, f"{nb.stem}-reopened.png", extra["cell"])
        close(browser, rel)
        open_notebook(browser, rel, kernel=False)  # and with no kernel at all
        kernel = panel_call(browser, rel, "return !!panel.sessionContext.session;")
        drawn = [i for i in wait_images(browser, rel)["images"] if i["cell"] == extra["cell"]]
        assert not kernel and drawn and drawn[-1]["src"] == extra["after"], (
            f"{nb.name} reopened without a kernel: the stepper's last drawing is not there"
        )
        screenshot(browser, rel, f"{nb.stem}-no-kernel.png", extra["cell"])
    close(browser, rel)


def test_the_stored_tour_shows_no_widget_error_when_trusted(lab: Lab, browser: Any) -> None:
    """The stored notebook 01, opened with a kernel and trusted (JupyterLab then renders
    widget views): no "Error displaying widget"; the controls' line of text and the
    stepper's drawing are shown instead (the stored file holds no widget view)."""
    rel = f"trusted/{TOUR}"
    (lab.root / "trusted").mkdir(exist_ok=True)
    shutil.copyfile(ROOT / "notebooks" / TOUR, lab.root / rel)
    open_notebook(browser, rel)
    panel_call(
        browser,
        rel,
        "app.shell.activateById(panel.id);"
        "const done = app.commands.execute('notebook:trust');"
        "let button = null;"
        "for (let i = 0; i < 50 && !button; i++) {"
        "  await new Promise(r => setTimeout(r, 100));"
        "  button = document.querySelector('.jp-Dialog .jp-mod-accept'); }"
        "if (!button) throw new Error('no trust dialog');"
        "button.click(); await done;",
    )
    assert panel_call(browser, rel, "return panel.content.widgets.every(c => c.model.trusted);")
    state = wait_images(browser, rel)
    deadline = time.monotonic() + 10  # a widget view says "Loading", then fails
    while time.monotonic() < deadline and all(
        w["text"].startswith("Loading") for w in state["widgets"]
    ):
        time.sleep(0.5)
        state = page_state(browser, rel)
    k = next(i for i, c in enumerate(cells(browser, rel)) if "stepper.stepper(" in c["source"])
    shown = panel_call(browser, rel, "return panel.content.widgets[args[0]].node.innerText;", k)
    screenshot(browser, rel, "01-iov-iter-tour-trusted.png", k)
    assert state["widgets"] == [], f"{TOUR} trusted: {state['widgets']}"
    assert "[stepper controls:" in shown
    assert [i for i in state["images"] if i["cell"] == k], "the stepper's drawing is not shown"
    close(browser, rel)


def _tables_wider_than_the_page(driver: Any, path: str) -> list[dict[str, Any]]:
    """Summary tables (class "summary") that need a horizontal scroll bar in their output."""
    return panel_call(
        driver,
        path,
        """
        return Array.from(panel.node.querySelectorAll('.jp-OutputArea-output table.summary'))
          .map(t => ({table: t.scrollWidth, room: t.closest('.jp-OutputArea-output').clientWidth,
                      text: t.innerText.slice(0, 80)}))
          .filter(t => t.table > t.room + 1);
        """,
    )


def _step_the_stepper(driver: Any, path: str) -> dict[str, Any]:
    """Drag the stepper's slider, click advance: the line and the drawing change."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    k = next(i for i, c in enumerate(cells(driver, path)) if "stepper.stepper(" in c["source"])
    node = driver.execute_script(
        JS_PANEL + "return panel.content.widgets[arguments[1]].node;", path, k
    )
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", node)
    handle = node.find_element(By.CSS_SELECTOR, ".noUi-handle")
    readout = node.find_element(By.CSS_SELECTOR, ".widget-readout")
    before_value = readout.text.strip()

    def drawing() -> str:
        imgs = [i for i in page_state(driver, path)["images"] if i["cell"] == k]
        assert imgs, "the stepper shows no drawing"
        return imgs[-1]["src"]

    def line() -> str:
        return node.find_element(By.CSS_SELECTOR, ".widget-html").text.strip()

    first = drawing()
    ActionChains(driver).click_and_hold(handle).move_by_offset(60, 0).release().perform()
    deadline = time.monotonic() + 10
    while readout.text.strip() == before_value and time.monotonic() < deadline:
        time.sleep(0.1)
    value = readout.text.strip()
    assert value != before_value, "dragging the slider did not change its value"
    advance = next(b for b in node.find_elements(By.TAG_NAME, "button") if b.text == "advance")
    advance.click()
    deadline = time.monotonic() + 20
    while f"advance({value})" not in line() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"advance({value})" in line(), f"after advance({value}) the line says {line()!r}"
    deadline = time.monotonic() + 20
    while drawing() == first and time.monotonic() < deadline:
        time.sleep(0.1)
    after = drawing()
    assert after != first, "the drawing did not change after advance"
    print(f"stepper: slider {before_value} -> {value}, advance: {line()}")
    return {"cell": k, "after": after, "value": value}


# ---- the report page (index.html) at two screen widths ---------------------------------------


def _report_page(tmp: Path, layout: str = "headline") -> Path:
    """index.html of a reproduction holding the stored reference summary, no notebook runs."""
    import types

    import pandas as pd

    from labkit.report import summary
    from labkit.run import index_page

    table = pd.read_csv(ROOT / "data" / "reproduction" / "summary.csv")
    rep = types.SimpleNamespace(
        runs=[], out=tmp, summary=table, quick=False, finished=None, seconds=0.0
    )
    page = index_page.index_html(rep)
    if layout != "headline":  # the same page with another layout of the table
        page = page.replace(
            summary.summary_html(table.drop(columns=["recorded"]), layout="headline"),
            summary.summary_html(table.drop(columns=["recorded"]), layout=layout),
        )
    dest = tmp / f"index-{layout}.html"
    dest.write_text(page, encoding="utf-8")
    return dest


def report_geometry(page: Path, width: int, shot: str | None = None) -> dict[str, Any]:
    """The page at ``width`` px: its scroll width, the window's, the summary table's width
    and its tallest row (details closed); a screenshot of the table to ``shot``."""
    with chromium(width) as driver:
        driver.get(page.as_uri())
        geometry = driver.execute_script(
            """
            const t = document.querySelector('table.summary');
            const rows = [...t.querySelectorAll('tbody tr')]
                .map(r => r.getBoundingClientRect().height);
            t.scrollIntoView({block: 'start'});
            return {page: document.documentElement.scrollWidth,
                    window: document.documentElement.clientWidth,
                    table: Math.round(t.getBoundingClientRect().width),
                    room: t.parentElement.clientWidth,
                    tallest_row: Math.round(Math.max(...rows)), rows: rows.length};
            """
        )
        if shot:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(ARTIFACTS / shot))
            print(f"screenshot: {ARTIFACTS / shot}")
        return geometry


@pytest.mark.parametrize("width", [1280, 1920])
def test_report_table_fits_the_screen(tmp_path: Path, width: int) -> None:
    """The headline table fits the page's width (no sideways scrolling) and no row is taller
    than a third of a 1,000 px window with its details closed."""
    g = report_geometry(_report_page(tmp_path), width, f"report-{width}.png")
    print(f"report at {width} px: {g}")
    assert g["page"] <= g["window"], f"the page scrolls sideways at {width} px: {g}"
    assert g["table"] <= g["room"], f"the summary table is wider than the page: {g}"
    assert g["tallest_row"] <= 330, f"a summary row is {g['tallest_row']} px tall: {g}"
