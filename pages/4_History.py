"""History: every saved result. Filter, compare two or more side by side (a verdict for two runs
from their raw samples), import results from another machine, download or delete a selection."""

from __future__ import annotations

import streamlit as st

from jaxcompare import JaxCompareError
from jaxcompare.analysis.compare import compare_results
from jaxcompare.app import access, chart_ui, charts_history, controls, navigation, reopen, resources, ui
from jaxcompare.app import history_view as hv
from jaxcompare.history.exchange import export_csv, export_json
from jaxcompare.i18n import _, ngettext, sentences, translate_text
from jaxcompare.model.spec import PRECISIONS

ui.start_page(navigation.HISTORY)

TABLE, ROW_IDS = "history_table", "history_row_ids"
CONFIRM, NOTICE, UPLOADS = "history_confirm_delete", "history_notice", "history_uploads"
CASE, PRECISION, DEVICE, HOST, JAX, DATES = "history_case", "history_precision", "history_device", "history_host", \
    "history_jax", "history_dates"
PORT = "history_port"
FILTERS = (CASE, PORT, PRECISION, DEVICE, HOST, JAX, DATES)
MAX_ROWS = 2000
NOTICE_BOX = {"success": st.success, "error": st.error, "info": st.info, "warning": st.warning}
NOTICE_ICON = {"success": ":material/check_circle:", "error": ":material/error:", "info": ":material/info:",
               "warning": ":material/warning:"}
IMPORT_HINT = _("On another machine (a GPU host, say): `python -m jaxcompare run --case svd --shape 500x500 "
                "--save`, then `python -m jaxcompare export results.json`; import that file with the uploader in "
                "the sidebar, or with `python -m jaxcompare import results.json` here.")


def notify(level: str, text: str) -> None:
    """A message for the next run to show once; worded now (callbacks know the reader's language)."""
    st.session_state[NOTICE] = (level, text)


def select_rows(rows: list[int]) -> None:
    st.session_state[TABLE] = {"selection": {"rows": rows, "columns": []}}


# --- callbacks (run before the script) ----------------------------------------------------------
def on_upload(key: str) -> None:
    uploaded = st.session_state.get(key)
    if uploaded is None or not access.history_editable():
        return
    try:
        added, present = resources.get_store().import_json(uploaded.getvalue(), source=uploaded.name)
    except JaxCompareError as exc:
        notify("error", translate_text(str(exc)))
        return
    access.log_edit(f"import of {uploaded.name!r}: {added} added, {present} already present")
    notify("success", hv.import_message(added, present, uploaded.name))
    st.session_state[UPLOADS] = st.session_state.get(UPLOADS, 0) + 1  # a fresh, empty uploader


def ask_delete(ids: list[str]) -> None:
    st.session_state[CONFIRM] = list(ids)


def cancel_delete() -> None:
    st.session_state.pop(CONFIRM, None)


def confirm_delete() -> None:
    ids = st.session_state.pop(CONFIRM, [])
    if not access.history_editable():  # the button is not drawn then; a forged click ends here
        return
    try:
        deleted = resources.get_store().delete(ids)
    except JaxCompareError as exc:
        notify("error", _("Nothing was deleted: {error}").format(error=translate_text(str(exc))))
        return
    access.log_edit(f"delete of {deleted} result(s): {', '.join(i[:8] for i in ids)}")
    notify("success", ngettext("Deleted {count} result.", "Deleted {count} results.", deleted).format(count=deleted))
    select_rows([])


def clear_filters() -> None:
    for key in FILTERS:
        st.session_state.pop(key, None)


# --- widgets ------------------------------------------------------------------------------------------
def filter_widgets(facets: dict[str, list[str]]) -> dict[str, object]:
    """The sidebar filters; returns Store.list keyword arguments."""
    options = {CASE: facets["case"], PORT: facets.get("port", []), DEVICE: hv.device_options(facets),
               HOST: facets["host"], JAX: hv.jax_options(facets)}
    for key, values in options.items():  # a value that vanished (deleted results) resets its filter
        if st.session_state.get(key) is not None and st.session_state[key] not in values:
            st.session_state[key] = None
    st.header(_("Filters"))
    st.selectbox(_("Case"), options[CASE], index=None, placeholder=_("All cases"), key=CASE)
    if len(options[PORT]) > 1:  # only where the history holds runs of more than one JAX port
        st.selectbox(_("Port"), options[PORT], index=None, placeholder=_("All ports"), key=PORT,
                     help=_("The JAX port measured (a case's ways of writing its JAX side); a run saved before "
                            "cases had ports measured its case's default port and has none."))
    st.segmented_control(_("Precision"), PRECISIONS, key=PRECISION, format_func=controls.precision_label)
    st.selectbox(_("Device"), options[DEVICE], index=None, placeholder=_("All devices"), key=DEVICE)
    if not access.private_details_hidden():
        st.selectbox(_("Host"), options[HOST], index=None, placeholder=_("All hosts"), key=HOST,
                     format_func=lambda h: h or _("(unknown host)"))
    st.selectbox(_("JAX version"), options[JAX], index=None, placeholder=_("All JAX versions"), key=JAX,
                 help=_("The JAX the worker ran, as recorded with each result (a JAX versions run saves one per "
                        "version)."))
    st.date_input(_("Measured between (UTC)"), value=(), key=DATES, format="YYYY-MM-DD",
                  help=_("Pick a first and a last day (both included); one day alone means from that day on."))
    since, until = hv.date_bounds(st.session_state.get(DATES))
    active = any(st.session_state.get(k) for k in (CASE, PORT, PRECISION, DEVICE, HOST, JAX)) or since is not None
    st.button(_("Clear filters"), icon=":material/filter_alt_off:", on_click=clear_filters, disabled=not active,
              key="history_clear_filters")
    return {"case": st.session_state.get(CASE), "port": st.session_state.get(PORT) if len(options[PORT]) > 1 else None,
            "precision": st.session_state.get(PRECISION),
            "device": st.session_state.get(DEVICE),
            "host": None if access.private_details_hidden() else st.session_state.get(HOST),
            "jax": st.session_state.get(JAX), "since": since, "until": until}


def import_widget() -> None:
    st.header(_("Import"))
    key = f"history_upload_{st.session_state.get(UPLOADS, 0)}"
    st.file_uploader(_("Results from another machine (JSON)"), type=["json"], key=key, on_change=on_upload,
                     args=(key,), help=_("A file from `python -m jaxcompare export`, `run --json` or "
                                         "`sweep --json`, or a download from this page. Results already "
                                         "here are skipped."))


def keep_selection(ids: list[str]) -> None:
    """The table's selection is by row position: when the rows change (filters, a delete, another
    session's new result), move it so the same results stay selected."""
    before = st.session_state.get(ROW_IDS)
    state = st.session_state.get(TABLE)
    if before is not None and before != ids and state is not None:
        chosen = {before[i] for i in state["selection"]["rows"] if i < len(before)}
        select_rows([i for i, rid in enumerate(ids) if rid in chosen])
    st.session_state[ROW_IDS] = ids


def selection_actions(results: list, labels: list[str]) -> None:
    n = len(results)
    bar = st.container(horizontal=True, vertical_alignment="center")
    bar.markdown(_("**{count} selected**").format(count=n), width="content")
    if n == 1:
        reopen.open_link(results[0], container=bar)
    elif reopen.is_race(results):  # the ports of one race: reopened as the race
        reopen.open_race_link(results, container=bar)
    bar.download_button(_("Selection (JSON)"), data=lambda: export_json(results), file_name="jaxcompare_results.json",
                        mime="application/json", icon=":material/download:", on_click="ignore",
                        key="history_download_json")
    bar.download_button(_("Selection (CSV)"), data=lambda: export_csv(results), file_name="jaxcompare_results.csv",
                        mime="text/csv", icon=":material/download:", on_click="ignore", key="history_download_csv")
    if not access.history_editable():
        return
    bar.button(_("Delete {count} selected").format(count=n), icon=":material/delete:", on_click=ask_delete,
               args=([r.id for r in results],), key="history_delete")
    pending = st.session_state.get(CONFIRM)
    if pending:
        with st.container(border=True):
            names = [label for r, label in zip(results, labels, strict=True) if r.id in set(pending)]
            st.warning(hv.delete_question(names, len(pending)), icon=":material/delete_forever:")
            confirm = st.container(horizontal=True)
            confirm.button(_("Yes, delete"), type="primary", on_click=confirm_delete, key="history_confirm")
            confirm.button(_("Cancel"), on_click=cancel_delete, key="history_cancel")


def verdict_block(a, b, labels: list[str]) -> None:
    """Is B (the newer run) faster than A? From both runs' raw samples, JAX and NumPy side."""
    cmp = compare_results(a, b)
    st.subheader(_("Is B faster than A?"))
    st.markdown(hv.which_is_which(labels))
    warning = hv.comparison_warning(cmp)
    if warning:
        st.warning(warning, icon=":material/warning:")
    st.markdown(hv.setup_line(cmp.differences))
    st.caption(hv.speedup_line(cmp.speedup, a, b))
    kept = hv.numpy_kept_line(cmp)
    if kept:
        st.caption(kept)
    for column, (title, subject, v) in zip(st.columns(2, gap="medium"), hv.runtime_verdicts(cmp), strict=True):
        level, headline = hv.verdict_headline(v)
        with column.container(border=True):
            st.markdown(f"**{title}**")
            NOTICE_BOX[level](headline, icon=NOTICE_ICON[level])
            st.markdown(hv.verdict_explanation(v, subject))
            st.caption(hv.verdict_stats(v))
    st.caption(_("B against A as a rerun of each would differ: each run's median moves by its own range and the "
                 "spread measured between reruns, so a run's samples are not counted as independent. The range "
                 "of the ratio must exclude 1x and the shift be at least 2% before a run is called faster or "
                 "slower."))


# --- page ---------------------------------------------------------------------------------------------
st.title(navigation.HISTORY.label)
try:
    store = resources.get_store()
    total = store.count()
    facets = store.facets()
except JaxCompareError as exc:
    st.error(_("The results database cannot be opened: {error}").format(error=translate_text(str(exc))),
             icon=":material/error:")
    st.caption(_("Set JAXCOMPARE_DB to a writable file path and restart the app."))
    st.stop()

with st.sidebar:
    filters = filter_widgets(facets) if total else {}
    if access.history_editable():
        import_widget()
    access.operator_ui()

if access.private_details_hidden():
    st.caption(_("Every Compare result and every Size-sweep point is saved here automatically · {total} saved")
               .format(total=total))
else:
    st.caption(_("Every Compare result and every Size-sweep point is saved here automatically · {total} saved in "
                 "`{path}`").format(total=total, path=store.location))
if NOTICE in st.session_state:
    level, text = st.session_state.pop(NOTICE)
    NOTICE_BOX[level](text, icon=NOTICE_ICON[level])

if total == 0:
    st.info(sentences(_("No saved results yet. Run a comparison on **Compare** or a **Size sweep**: every result "
                        "is saved here automatically."), IMPORT_HINT if access.history_editable() else ""),
            icon=":material/history:")
    links = st.container(horizontal=True)
    ui.page_link(navigation.COMPARE, container=links)
    ui.page_link(navigation.SIZE_SWEEP, container=links)
    st.stop()

try:
    rows = store.list(**filters, limit=MAX_ROWS)
except JaxCompareError as exc:
    st.error(translate_text(str(exc)), icon=":material/error:")
    st.stop()
if not rows:
    st.info(_("No saved results match these filters."), icon=":material/filter_alt:")
    st.button(_("Clear filters"), on_click=clear_filters, key="history_clear_filters_main")
    st.stop()

ids = [row["id"] for row in rows]
keep_selection(ids)
st.caption(hv.showing_text(len(rows), total, MAX_ROWS, access.history_editable()))
event = st.dataframe(
    hv.table_rows(rows, host=not access.private_details_hidden(), doubts=hv.set_aside(store, ids)),
    key=TABLE, on_select="rerun", selection_mode="multi-row", hide_index=True,
    width="stretch", height=min(38 + 35 * len(rows), 420),
    column_config={_("NumPy runtime (plain process)"): st.column_config.TextColumn(
                       help=_("NumPy timed in a fresh plain process, as your own program runs it: the speedup's "
                              "numerator. Where the next column is blank, NumPy's one figure.")),
                   _("NumPy (freed memory kept)"): st.column_config.TextColumn(
                       help=_("NumPy timed in the worker beside JAX, with freed memory kept for reuse (glibc's "
                              "allocator told so). Blank where NumPy was timed once: arrays too small for the "
                              "allocator to matter, a busy machine, or a result saved before both were timed.")),
                   _("Speedup"): st.column_config.TextColumn(
                       help=_("NumPy runtime (plain process) / JAX runtime; above 1x JAX is faster. \"set aside\": "
                              "not trusted, its range in the next column")),
                   _("Set aside"): st.column_config.TextColumn(
                       width="large", help=_("A run whose speedup is not trusted: the range its Speedup tile shows "
                                             "instead of a bare figure; open it in Compare for why")),
                   _("ID"): st.column_config.TextColumn(help=_("Short id; the CLI accepts it (export --ids)"))},
)
selected = [ids[i] for i in event.selection.rows if i < len(ids)]
if not selected:
    st.info(_("Select two runs of the same case (say, before and after a JAX upgrade, or CPU against GPU) for a "
              "verdict — faster, slower or no significant difference — or more to see their phases side by side."),
            icon=":material/checklist:")
    st.stop()

try:
    readable, unreadable = store.load_readable(selected)
except JaxCompareError as exc:
    st.warning(_("{error}; refresh the page.").format(error=translate_text(str(exc))), icon=":material/warning:")
    st.stop()
if unreadable:  # deleted by another session since the table was drawn, or a saved row that cannot be read
    st.warning(hv.unreadable_text(unreadable), icon=":material/warning:")
if not readable:
    st.stop()
results = hv.oldest_first(access.visible(readable))
labels = hv.lettered_labels(results)
selection_actions(results, labels)
for result, label in zip(results[:hv.MAX_COMPARE], labels, strict=False):
    st.caption(hv.roofline_line(result, label))
if len(results) < 2:
    st.caption(_("Select one more run to compare them side by side."))
    st.stop()

shown_results = results[:hv.MAX_COMPARE]
if len(results) > hv.MAX_COMPARE:
    st.info(_("Comparing the {shown} oldest of the {selected} selected runs.").format(
        shown=hv.MAX_COMPARE, selected=len(results)), icon=":material/info:")
shown_labels = labels[:hv.MAX_COMPARE]
if len(results) == 2:
    verdict_block(results[0], results[1], labels)
st.subheader(_("{count} runs side by side").format(count=len(shown_results)))
if len(results) > 2:
    st.caption(_("Select exactly two runs for a faster / slower / no significant difference verdict."))
chart_ui.chart(charts_history.phase_chart(shown_results, shown_labels), _("Phase chart"), "history_phases",
               stretch=True)
chart_ui.chart(charts_history.speedup_chart(shown_results, shown_labels), _("Speedup chart"), "history_speedups",
               stretch=True)
