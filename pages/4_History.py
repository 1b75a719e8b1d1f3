"""History page (being built)."""

import streamlit as st

import ui

st.set_page_config(page_title="History · jaxcompare", layout="wide")
ui.sidebar_nav()
st.title("History")
st.info("Saved results: filter, compare runs, import and export. This page is being built.")
