"""labkit.teach.stepper: steps run the model; widgets where they can run, a drawing elsewhere."""

from __future__ import annotations

import base64

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import labkit  # noqa: E402
from labkit.teach import stepper as st  # noqa: E402
from labkit.teach import viz  # noqa: E402

PAGE = labkit.PAGE_SIZE


def iovec(mem):
    m = mem.map(3 * PAGE)
    a = m.addr
    segs = [(a, 100), (a + 2000, 0), (a + PAGE, 200), (a + 2 * PAGE + 16, 150)]
    return labkit.import_iovec(labkit.ITER_DEST, segs, mem), m


def test_steps_run_the_model():
    mem = labkit.UserMemory()
    it, m = iovec(mem)
    twin, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    s.apply("advance", 150)
    twin.advance(150)
    assert s.state == viz.iter_state(twin)
    step = s.apply("copy", 120)
    assert step.returned == "120" and "copy_to_iter(120 bytes of 255)" == step.label
    assert bytes(m.array[PAGE + 50 : PAGE + 170]) == b"\xff" * 120  # real bytes in the mapping
    twin.copy_to_iter(b"\0" * 120)
    s.apply("revert", 180)
    twin.revert(180)
    assert s.state == viz.iter_state(twin) and s.consumed() == 90
    s.apply("start")
    assert s.state.count == 450 and s.consumed() == 0
    assert [x.label for x in s.steps][0] == "start" and len(s.steps) == 5


def test_a_refused_step_says_why_and_changes_nothing():
    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it)
    s.apply("advance", 30)
    before = s.state
    step = s.apply("revert", 1000)
    assert step.refused.startswith("IterMisuseError") and s.state == before
    assert "refused" in s.describe()
    assert s.apply("explode", 1).refused.startswith("ValueError: unknown operation")


def test_source_iterator_copies_out():
    k0 = bytearray(b"\x01" * 64)
    it = labkit.IovIter.kvec(labkit.ITER_SOURCE, [k0])
    s = st.stepper(it, nbytes=40)
    step = s.apply("copy")
    assert step.label == "copy_from_iter(40)" and step.returned == "40 bytes"
    assert s.state.count == 24


def test_without_widgets_it_shows_the_static_drawing(monkeypatch):
    monkeypatch.setattr(st, "widgets_available", lambda: False)
    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    bundle = s._repr_mimebundle_()
    assert set(bundle) == {"image/png", "text/plain"}
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle["text/plain"].startswith("Stepper: start: IOVEC ITER_DEST count=450")
    assert s.widget() is None


def test_with_widgets_the_buttons_step_and_redraw(monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.setattr(st, "widgets_available", lambda: True)
    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    panel = s.widget()
    bundle = s._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "image/png" in bundle and bundle["text/plain"].startswith("Stepper:")
    controls, line, image = panel.children
    slider, advance, revert, copy, start = controls.children
    assert copy.description == "copy_to_iter"
    first = image.value
    slider.value = 150
    advance.click()
    assert s.state.count == 300 and s.state.seg == 2 and s.state.iov_offset == 50
    assert image.value != first and "advance(150)" in line.value
    revert.click()
    revert.click()  # past the start: refused, shown in red
    assert "refused" in line.value and "#b00020" in line.value and s.state.count == 450
