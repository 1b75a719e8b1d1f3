"""Atlas: when is JAX faster? Every case at three sizes, both precisions, each device, from an atlas file
(``jaxcompare atlas`` writes yours; the project's recorded ones sit beside it)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from jaxcompare.analysis import atlas as atlas_mod
from jaxcompare.analysis.atlas_text import counts_line, environment_rows, markdown, measure_label, partial_line
from jaxcompare.app import access, chart_ui, navigation, resources, ui
from jaxcompare.app import atlas_view as av
from jaxcompare.app.charts_atlas import atlas_heatmap, atlas_html
from jaxcompare.app.language import url_params
from jaxcompare.i18n import _, translate_text

ui.start_page(navigation.ATLAS)

SOURCE, GROUPS, MEASURE = "atlas_source", "atlas_groups", "atlas_measure"


@st.cache_resource(show_spinner=False, max_entries=8)
def read(path: str, mtime: float) -> tuple[atlas_mod.Atlas | None, str | None]:
    """An atlas file, read again when it changes (a running `jaxcompare atlas` adds a cell at a time). One
    object for every session, never changed here: st.cache_data's copy cost each rerun 40 ms an atlas, and
    forgot the views worked out on it."""
    return av.load_source(av.Source(Path(path), False))


def add_to_history(atlas: atlas_mod.Atlas) -> None:
    added, present = resources.get_store().import_docs([r.to_dict() for r in atlas.results()], source="atlas")
    st.session_state["atlas_notice"] = _("Added to History: {added} results ({present} were there already).").format(
        added=added, present=present)


st.title(navigation.ATLAS.label)
st.caption(_("When is JAX faster? Every case at a small, a middle and a large shape, in float32 and float64, on "
             "each device: the speedup is NumPy's time over JAX's, coloured on a log scale centred on 1x. A cell "
             "the checklist set aside is grey and marked ?, with its reason; a cell the device cannot run says so; "
             "a planned cell the atlas does not hold reads \"not measured\" in a dotted frame."))

found = av.sources()
if not found:
    st.info(_("No atlas yet. Measure one with `python -m jaxcompare atlas` (quick timing; it resumes where it "
              "stopped), then open this page again."), icon=":material/grid_on:")
    st.stop()

loaded = {s.key: read(s.key, s.path.stat().st_mtime) for s in found}
labels = {s.key: av.source_label(s, loaded[s.key][0]) for s in found}
with st.sidebar:
    st.header(navigation.ATLAS.label)
    chosen_key = st.selectbox(_("Which atlas"), list(labels), format_func=labels.get, key=SOURCE)
    atlas, problem = loaded[chosen_key]
    groups = sorted(set(av.case_groups(atlas).values())) if atlas is not None else []
    # A key per set of groups: another atlas's choice (numpy alone, say) must not hide this one's other groups.
    chosen_groups = st.pills(_("Groups"), groups, selection_mode="multi", default=groups,
                             key=f"{GROUPS}_{'_'.join(groups)}")
    measure = st.segmented_control(_("Speedup"), atlas_mod.MEASURES, default="blocked", key=MEASURE,
                                   format_func=measure_label,
                                   help=_("Blocked: each JAX call waits for its result (the headline). Back to "
                                          "back: calls queued one after another, one wait at the end, as a loop "
                                          "runs them.")) or "blocked"

for source in found:  # the reader's own atlas beside the recorded ones, each with where and when
    st.caption(("**" + labels[source.key] + "**") if source.key == chosen_key else labels[source.key])
if atlas is None:
    st.error(translate_text(problem or ""), icon=":material/error:")
    st.stop()
short = partial_line(atlas)
if short:  # said before anything is drawn: a partial atlas must not pass for a whole one
    st.warning(short, icon=":material/grid_off:")

cases = [case for case, group in av.case_groups(atlas).items() if group in (chosen_groups or [])]
if not cases:
    st.info(_("Pick at least one group in the sidebar."), icon=":material/filter_alt:")
    st.stop()
if "atlas_notice" in st.session_state:
    st.success(st.session_state.pop("atlas_notice"), icon=":material/check_circle:")

store = resources.get_store()
held = set(store.all_ids())
rows = av.heatmap_rows(atlas, measure, cases, link_ids=held, also=url_params())
st.markdown(counts_line(atlas, measure, cases))
missing = [r for r in atlas.results() if r.id not in held]
if missing:
    row = st.container(horizontal=True, vertical_alignment="center")
    row.caption(_("Results of this atlas not in your History: {n}. Their cells link once they are added.").format(
        n=len(missing)))
    if access.history_editable():
        row.button(_("Add them to History"), icon=":material/history:", on_click=add_to_history, args=(atlas,),
                   key="atlas_add")
else:
    st.caption(_("Click a cell to open its result on the Compare page."))
sizes = [_(atlas_mod.SIZE_LABELS[s]) for s in atlas_mod.SIZES]
chart = atlas_heatmap(rows, sizes)
chart_ui.chart(chart, _("Atlas chart"), "atlas")

crossings = av.crossover_rows(atlas, cases)
st.subheader(_("Crossovers"))
if measure != "blocked":
    st.caption(_("From the blocked speedups (the headline), whichever speedup the heatmap shows."))
if crossings:
    ui.plain_table(crossings)
else:
    st.caption(_("No case crosses 1x between two firm sizes here (trusted, their ranges clear of 1x)."))
doubts = av.set_aside_rows(atlas, measure, cases)
if doubts:
    # The cells held that have no speedup to quote; planned cells not held are named by the Partial line.
    with st.expander(_("Cells without a trusted speedup ({n})").format(n=len(doubts))):
        ui.plain_table(doubts)
st.subheader(navigation.ENVIRONMENT.label)
ui.plain_table(environment_rows(atlas))

downloads = st.container(horizontal=True)
downloads.download_button(
    _("Atlas (HTML)"), data=ui.in_this_language(lambda: atlas_html(chart, atlas, measure)), file_name="atlas.html",
    mime="text/html", icon=":material/download:", on_click="ignore", key="atlas_html")
downloads.download_button(_("Atlas (Markdown)"), data=markdown(atlas, measure), file_name="atlas.md",
                          mime="text/markdown", icon=":material/download:", on_click="ignore", key="atlas_md")
