"""The app's pages, each declared once: file, title and icon, and in BLURBS the Home page's card. The
sidebar, the Home cards, page titles, links between pages and URLs all read this list
(Streamlit's pages/ directory mechanism runs the files; never st.navigation: DESIGN)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from ..i18n import N_, _


@dataclass(frozen=True)
class Page:
    path: str  # relative to the app's root, as st.page_link and st.switch_page take it
    title: str  # N_(): shown with _()
    icon: str

    @property
    def label(self) -> str:
        """The title in the reader's language."""
        return _(self.title)

    @property
    def blurb(self) -> str:
        """The Home page's card (N_(): shown with _()); "" for Home itself."""
        return BLURBS.get(self, "")

    @property
    def url_path(self) -> str:
        """The page's address under the server root, as Streamlit derives it from the file name
        ("pages/3_Pitfalls.py" -> "Pitfalls"); "" for Home."""
        if self.path == HOME.path:
            return ""
        return PurePosixPath(self.path).stem.split("_", 1)[-1]


HOME = Page("app.py", N_("Home"), ":material/home:")
COMPARE = Page("pages/1_Compare.py", N_("Compare"), ":material/compare_arrows:")
SIZE_SWEEP = Page("pages/2_Size_sweep.py", N_("Size sweep"), ":material/stacked_line_chart:")
PITFALLS = Page("pages/3_Pitfalls.py", N_("Pitfalls"), ":material/school:")
HISTORY = Page("pages/4_History.py", N_("History"), ":material/history:")
ENVIRONMENT = Page("pages/5_Environment.py", N_("Environment"), ":material/settings:")
VERSIONS = Page("pages/6_Versions.py", N_("JAX versions"), ":material/difference:")
ATLAS = Page("pages/7_Atlas.py", N_("Atlas"), ":material/grid_on:")
# The sidebar's order.
PAGES = (HOME, COMPARE, SIZE_SWEEP, PITFALLS, HISTORY, ENVIRONMENT, VERSIONS, ATLAS)
# The Home page's card of each page but Home (N_(): shown with _()).
BLURBS: dict[Page, str] = {
    COMPARE: N_("One case, one shape: NumPy runtime beside JAX's transfer, compile, runtime and dispatch; "
                "break-even calls; sample noise; agreement; the IPython lines to check it by hand."),
    SIZE_SWEEP: N_("One case from tiny to large inputs: runtime and speedup against size on log-log axes, "
                   "the crossover where JAX starts to win, and how the share of one-off costs shrinks."),
    PITFALLS: N_("Eight classic benchmarking mistakes — compile in the first call, async dispatch, float64 "
                 "vs float32, transfers, tiny inputs, reduced-precision matmuls, restarts that compile again, one "
                 "way of writing a function taken for JAX's speed — each measured live beside the right way."),
    HISTORY: N_("Every saved result: filter, compare two runs (faster, slower or no significant "
                "difference), import results from another machine, export JSON or CSV."),
    ENVIRONMENT: N_("Versions, devices, each worker's x64 state, CPU, BLAS threads and XLA flags, with "
                    "warnings when something makes the numbers less trustworthy."),
    VERSIONS: N_("One case under several JAX releases, each in its own environment: runtime, compile and "
                 "first call by version, and whether the next release is faster or slower beyond the noise."),
    ATLAS: N_("When is JAX faster? Every case at three sizes, float32 and float64, on each device, as one heatmap: "
              "doubtful cells greyed, the crossover per case, yours beside the recorded ones."),
}
