"""Step a drawn iterator by hand: buttons for advance, revert and copy, a slider for the bytes.

:func:`stepper` returns a :class:`Stepper`.  Displayed in JupyterLab (with
ipywidgets) it is a small panel: a slider for the number of bytes, buttons
``advance``, ``revert``, ``copy`` and ``back to start``, the drawing of the
iterator (:func:`labkit.teach.viz.draw_iter`) redrawn after each step, and a
line saying what the step did.  Every operation runs the C model on the real
memory the iterator describes; a refused one (reverting past the start) says
why and changes nothing.

The drawing is not a widget: it is an ordinary display output (a PNG and a
plain-text line) under the controls, which each step replaces in place through
its display id.  JupyterLab keeps that output in the notebook, so a saved
notebook shows the last drawing when it is reopened, with or without a kernel,
and so do a notebook converted to HTML, a code-hosting site and nbval.  Only
the controls need a running kernel; where they cannot be shown, their output
says so in one line.  Where widgets cannot run at all (a terminal, a plain
IPython) the object shows as the drawing alone.  The steps can also be applied
from code (:meth:`Stepper.apply`), which is what tests do.
"""

from __future__ import annotations

import base64
import html
import io
import textwrap
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt

from labkit.teach import viz

#: What the buttons do (copy is copy_to_iter for a DEST iterator, copy_from_iter for SOURCE).
OPERATIONS = ("advance", "revert", "copy", "zero")

#: Characters of the drawing's title per inch of its width (DejaVu Sans at 9 pt averages
#: about 5.5 pt a character: 11 a inch leaves a margin for wide letters).
TITLE_CHARS_PER_INCH = 11

#: The controls' text where they cannot be shown (no kernel, a page, an untrusted notebook).
CONTROLS_TEXT = (
    "[stepper controls: a bytes slider and advance / revert / copy / back to start buttons;"
    " run this cell in JupyterLab to use them]"
)


@dataclass
class Step:
    """One step taken: its label, what it returned, and the state after it."""

    label: str
    returned: str
    state: viz.IterState
    refused: str = ""


def widgets_available() -> bool:
    """True when ipywidgets can be imported and an IPython kernel is running."""
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython  # the [lab] extra
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class Stepper:
    """A drawn iterator and the steps taken on it (see the module docstring)."""

    def __init__(
        self,
        it: Any,
        *,
        contents: Any = None,
        nbytes: int = 50,
        scale: str = "bytes",
        show_addr: bool = False,
        width: float = 10.0,
    ) -> None:
        self.it = it
        self.contents = contents
        self.scale = scale
        self.show_addr = show_addr
        self.width = width
        self.segments = viz.iter_segments(it)
        self.total = sum(s.length for s in self.segments) or it.count
        self.nbytes = max(1, min(int(nbytes), max(self.total, 1)))
        self.steps: list[Step] = [Step("start", "", viz.iter_state(it))]
        self._fill = 0
        self._widget: Any = None
        self._handles: list[Any] = []  # the drawings shown, updated in place by each step

    # ---- the model -----------------------------------------------------------------

    @property
    def state(self) -> viz.IterState:
        """The iterator's state now."""
        return viz.iter_state(self.it)

    def consumed(self) -> int:
        """Bytes consumed since the first segment's start."""
        return sum(s.consumed for s in viz.layout(self.segments, self.state))

    def apply(self, op: str, n: int | None = None) -> Step:
        """Apply one operation of :data:`OPERATIONS` (or "start": revert all) and record it."""
        n = self.nbytes if n is None else int(n)
        it = self.it
        direction = self.state.direction
        label, returned, refused = f"{op}({n})", "", ""
        try:
            if op == "advance":
                it.advance(n)
            elif op == "revert":
                it.revert(n)
            elif op == "copy":
                if direction == "DEST":
                    value = 255 - 60 * self._fill  # each copy its own shade in the byte strip
                    self._fill = (self._fill + 1) % 4
                    label = f"copy_to_iter({n} bytes of value {value})"
                    returned = str(it.copy_to_iter(bytes([value]) * n))
                else:
                    label = f"copy_from_iter({n})"
                    returned = f"{len(it.copy_from_iter(n))} bytes"
            elif op == "zero":
                returned = str(it.zero(n))
            elif op == "start":
                back = self.consumed()
                label = f"revert({back}): back to the start"
                it.revert(back)
            else:
                raise ValueError(f"unknown operation {op!r}; expected one of {OPERATIONS}")
        except (OSError, ValueError) as exc:  # labkit refuses: nothing changed
            refused = f"{type(exc).__name__}: {exc}"
        step = Step(label, returned, viz.iter_state(it), refused)
        self.steps.append(step)
        self._refresh()
        return step

    # ---- what is shown -------------------------------------------------------------

    def describe(self) -> str:
        """One line: the last step and the state."""
        last = self.steps[-1]
        what = last.label + (f" -> {last.returned}" if last.returned else "")
        if last.refused:
            what += f" refused ({last.refused})"
        return f"{what}: {last.state.describe()}"

    def title_lines(self) -> list[str]:
        """:meth:`describe` wrapped to the drawing's width (a refused step's reason is long)."""
        return textwrap.wrap(self.describe(), width=int(self.width * TITLE_CHARS_PER_INCH))

    def figure(self) -> Any:
        """The drawing of the current state (a new matplotlib figure)."""
        lines = self.title_lines()
        fig, ax = plt.subplots(figsize=(self.width, 2.3 + 0.16 * (len(lines) - 1)))
        viz.draw_iter(
            self.it,
            ax,
            segments=self.segments,
            contents=self.contents,
            scale=self.scale,
            show_addr=self.show_addr,
            title="\n".join(lines),
        )
        fig.tight_layout()
        return fig

    def png(self) -> bytes:
        """The drawing of the current state as PNG bytes."""
        fig = self.figure()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
        plt.close(fig)
        return buf.getvalue()

    def widget(self) -> Any:
        """The ipywidgets controls (built once), or None where widgets are not available.

        A slider for the bytes, the four buttons and the line saying what the last step
        did; the drawing is shown beside them (see :meth:`_ipython_display_`).
        """
        if self._widget is not None or not widgets_available():
            return self._widget
        import ipywidgets as w  # the [lab] extra

        slider = w.IntSlider(
            value=self.nbytes,
            min=1,
            max=max(self.total, 1),
            description="bytes",
            continuous_update=False,
        )
        copy_name = "copy_to_iter" if self.state.direction == "DEST" else "copy_from_iter"
        buttons = {
            "advance": w.Button(description="advance", tooltip="it.advance(bytes)"),
            "revert": w.Button(description="revert", tooltip="it.revert(bytes)"),
            "copy": w.Button(description=copy_name, tooltip=f"it.{copy_name}(bytes)"),
            "start": w.Button(description="back to start", tooltip="revert everything consumed"),
        }
        line = w.HTML(value=self._line_html())

        def on_slider(change: dict) -> None:
            self.nbytes = int(change["new"])

        slider.observe(on_slider, names="value")
        for op, button in buttons.items():
            button.on_click(lambda _b, op=op: self.apply(op))
        self._widget = w.VBox([w.HBox([slider, *buttons.values()]), line])
        self._line = line
        return self._widget

    def _line_html(self) -> str:
        last = self.steps[-1]
        colour = "#b00020" if last.refused else "#222"
        return f"<code style='color:{colour}'>{html.escape(self.describe())}</code>"

    def _refresh(self) -> None:
        if self._widget is not None:
            self._line.value = self._line_html()
        if self._handles:
            bundle = self.drawing_bundle()
            for handle in self._handles:
                handle.update(bundle, raw=True)

    def drawing_bundle(self) -> dict[str, Any]:
        """The drawing of the current state as a display bundle: a PNG and one line of text."""
        return {
            "image/png": base64.b64encode(self.png()).decode("ascii"),
            "text/plain": f"Stepper: {self.describe()}",
        }

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return self.drawing_bundle()

    def _ipython_display_(self) -> None:
        """In a kernel with ipywidgets: the controls, then the drawing as an output of its
        own with a display id, which each step updates in place.  Elsewhere: the drawing."""
        from IPython.display import display  # the [lab] extra

        panel = self.widget()
        if panel is None:
            display(self.drawing_bundle(), raw=True)
            return
        controls = dict(panel._repr_mimebundle_() or {})
        controls["text/plain"] = CONTROLS_TEXT
        display(controls, raw=True)
        self._handles.append(display(self.drawing_bundle(), raw=True, display_id=True))

    def __repr__(self) -> str:
        return f"Stepper({self.describe()})"


def stepper(it: Any, **kwargs: Any) -> Stepper:
    """A :class:`Stepper` over ``it`` (keyword arguments as for :class:`Stepper`)."""
    return Stepper(it, **kwargs)


__all__ = [
    "Stepper",
    "stepper",
]
