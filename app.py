"""jaxcompare home page: what it does, which device it measures on, and the pages."""

from __future__ import annotations

import streamlit as st

from jaxcompare.app import navigation, ui
from jaxcompare.i18n import _

ui.start_page(navigation.HOME)

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
st.markdown(_("New here? **Compare** measures one function at one shape, yours or one of the catalog's; "
              "**Pitfalls** shows the classic mistakes measured live, a lab to show a class."))
cards = [page for page in navigation.PAGES if page.blurb]  # every page but Home, in the sidebar's order
for first in range(0, len(cards), 3):
    # The last row may hold fewer than three cards; its spare column stays empty.
    for column, page in zip(st.columns(3, gap="medium"), cards[first:first + 3], strict=False):
        with column.container(border=True, height="stretch"):
            ui.page_link(page)
            st.markdown(_(page.blurb))

st.subheader(_("How to read the numbers"))
st.markdown(_(
    "- **Runtime** is the median time per call once compiled, inputs already on the device, each call "
    "ended with `block_until_ready()`.\n"
    "- **Compile** (trace + lower + XLA compile) and **transfer** are paid once per function, shape and "
    "dtype; **break-even** is how many calls it takes JAX's faster runtime to pay them back.\n"
    "- **x32** compares float32 with float32, **x64** float64 with float64: each runs in its own worker "
    "process, and all measurements share one queue, so two never run at the same time."
))
