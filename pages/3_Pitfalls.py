"""Pitfalls page (being built)."""

import streamlit as st

import ui

st.set_page_config(page_title="Pitfalls · jaxcompare", layout="wide")
ui.sidebar_nav()
st.title("Pitfalls")
st.info("Each benchmarking pitfall measured live: the naive code beside the correct code. This page is being built.")
