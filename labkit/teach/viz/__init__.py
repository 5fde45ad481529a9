"""Drawing helpers for teaching: iterators over real memory, bvec tables and seeks.

The package is split by what it draws (:mod:`~labkit.teach.viz.state`: the
plain data; :mod:`~labkit.teach.viz.iters`: one iterator;
:mod:`~labkit.teach.viz.seeks`: bvec tables and seeks); every name is
re-exported here, so ``from labkit.teach import viz`` is all a notebook needs.

Two kinds of pictures:

* :func:`draw_iter` draws one iterator: its segments as boxes laid end to end
  in the order the iterator walks them (each labelled with its index, length
  and real address), the bytes already consumed, the bytes still to come
  (``count``), bytes outside ``count`` (after a truncate), and the current
  position.  :func:`draw_steps` draws the same iterator before and after a
  sequence of operations (advance, revert, copy, zero ...), one row per step.
* :func:`draw_bvec_seek` draws a registered buffer's bvec table, given as
  generic ``(page, offset, length)`` rows, and where a seek to a byte offset
  lands, given as the iterator state after the seek.  It needs nothing but
  those inputs, so it works with a table built by hand (:func:`bvec_table`) as
  well as with one from :func:`labkit.register_buffer`.

Everything the pictures show is also available as plain data
(:func:`iter_segments`, :func:`iter_state`, :func:`layout`), which is what the
tests check.  :func:`walk_seek` walks a bvec table in pure Python to say where a
byte offset lands, a teaching aid beside the C model; :func:`shift_seek` asks the
model's own shift (:func:`labkit.io_import_fixed`) for a registered buffer.
"""

from __future__ import annotations

from labkit.teach.viz.iters import (
    draw_iter,
    draw_side_by_side,
    draw_steps,
)
from labkit.teach.viz.seeks import (
    bvec_table,
    draw_bvec_seek,
    draw_seeks,
    shift_seek,
    table_rows,
    walk_seek,
)
from labkit.teach.viz.state import (
    IterState,
    Segment,
    iter_segments,
    iter_state,
    layout,
)

__all__ = [
    "IterState",
    "Segment",
    "bvec_table",
    "draw_bvec_seek",
    "draw_iter",
    "draw_seeks",
    "draw_side_by_side",
    "draw_steps",
    "iter_segments",
    "iter_state",
    "layout",
    "shift_seek",
    "table_rows",
    "walk_seek",
]
