"""jaxcompare home page: what it does, which device it measures on, and the pages."""

from __future__ import annotations

import streamlit as st

from jaxcompare.app import ui
from jaxcompare.i18n import _

st.set_page_config(page_title="jaxcompare", page_icon=":material/balance:", layout="wide")
ui.sidebar_nav()

st.title("jaxcompare")
st.markdown(_(
    "#### Is the JAX port of a NumPy/SciPy function really faster, and when?\n"
    "A naive `%timeit` mixes up compilation, host→device transfer and asynchronous dispatch. "
    "jaxcompare measures each phase on its own, at matched precision, with JAX calls blocked until "
    "the work is done, and checks that both sides compute the same answer. It reports the speedup per "
    "call **and** how many calls it takes before JAX's one-off costs pay for themselves."
))
ui.device_banner()

st.subheader(_("Pages"))
BLURBS = {
    "pages/1_Compare.py": _(
        "One case, one shape: NumPy runtime beside JAX's transfer, compile, runtime and dispatch; "
        "break-even calls; sample noise; agreement; the IPython lines to check it by hand."),
    "pages/2_Size_sweep.py": _(
        "One case from tiny to large inputs: runtime and speedup against size on log-log axes, "
        "the crossover where JAX starts to win, and how the share of one-off costs shrinks."),
    "pages/3_Pitfalls.py": _(
        "The classic benchmarking mistakes — compile in the first call, async dispatch, float64 "
        "vs float32, transfers, tiny inputs, TF32 — each measured live beside the right way."),
    "pages/4_History.py": _(
        "Every saved result: filter, compare two runs (faster, slower or no significant "
        "difference), import results from another machine, export JSON or CSV."),
    "pages/5_Environment.py": _(
        "Versions, devices, each worker's x64 state, CPU, BLAS threads and XLA flags, with "
        "warnings when something makes the numbers less trustworthy."),
}
cards = [page for page in ui.pages() if page[0] in BLURBS]  # every page but Home, in the sidebar's order
for first in range(0, len(cards), 3):
    # The last row may hold fewer than three cards; its spare column stays empty.
    for column, (path, label, icon) in zip(st.columns(3, gap="medium"), cards[first:first + 3], strict=False):
        with column.container(border=True, height="stretch"):
            ui.page_link(path, label, icon)
            st.markdown(BLURBS[path])

st.subheader(_("How to read the numbers"))
st.markdown(_(
    "- **Runtime** is the median time per call once compiled, inputs already on the device, each call "
    "ended with `block_until_ready()`.\n"
    "- **Compile** (trace + lower + XLA compile) and **transfer** are paid once per function, shape and "
    "dtype; **break-even** is how many calls it takes JAX's faster runtime to pay them back.\n"
    "- **x32** compares float32 with float32, **x64** float64 with float64: each runs in its own worker "
    "process, and all measurements share one queue, so two never run at the same time."
))
