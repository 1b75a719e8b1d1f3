"""Who the visitor is and what they may see: the session's owner id as jobs record it, the
client it is rate-limited as, the login (when the operator configures Streamlit's [auth]), the
operator token that unlocks the shared history in hosted mode, and redaction for everyone else."""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from ..engine import Owner, RateLimiter
from ..history.exchange import PRIVATE_ENV, redact
from ..i18n import N_, _, translate_text
from ..model.errors import BadInput
from ..model.result import Result
from . import jobs, resources

log = logging.getLogger("jaxcompare.app")


def owner_id() -> Owner:
    """Who asks, as the runner records it with each job: this session, the client it is
    rate-limited as (which a reload does not change), and the logged-in user, if any. The
    session's jobs are watched: they are stopped once its browser tab has gone (jobs.session_watch)."""
    if "owner_id" not in st.session_state:
        st.session_state["owner_id"] = uuid.uuid4().hex[:12]
    jobs.session_watch().follow(st.session_state["owner_id"])
    return Owner(session=st.session_state["owner_id"], client=client_id(), user=current_user())


# The header uvicorn (Streamlit's server) takes a client's address from when the connection comes
# from an address in FORWARDED_ALLOW_IPS (loopback unless set): anyone can write it.
_UVICORN_FORWARDED = "X-Forwarded-For"
UNVERIFIED_CLIENT = "forwarded"  # every visitor whose address only an unnamed header gave


def client_id() -> str:
    """The visitor's address: from the trusted proxy's header when the operator named one
    (the last address in it, the one that proxy saw), else the connection's. Streamlit says
    None for a loopback connection: every visitor on this machine is one client. An address
    that uvicorn took from an X-Forwarded-For nobody named is the visitor's own say: all such
    visitors are one client (`make serve` sets FORWARDED_ALLOW_IPS= so uvicorn does not)."""
    header = resources.get_runner().settings.trusted_proxy_header
    if header:
        forwarded = (st.context.headers.get(header) or "").split(",")[-1].strip()
        if forwarded:
            return forwarded
    address = st.context.ip_address
    if not isinstance(address, str) or not address:
        return "localhost"
    if address in _forwarded_addresses(st.context.headers.get_all(_UVICORN_FORWARDED)):
        return UNVERIFIED_CLIENT
    return address


def _forwarded_addresses(values: Sequence[str]) -> set[str]:
    """Every address an X-Forwarded-For header names (each with its port dropped, as uvicorn does)."""
    out = set()
    for value in values:
        for item in value.split(","):
            host = item.strip()
            if host.startswith("[") and "]" in host:
                host = host[1:host.index("]")]
            elif host.count(":") == 1:
                host = host.partition(":")[0]
            if host:
                out.add(host)
    return out


# --- login (when the operator configures Streamlit's [auth]) ---------------------------------------
def auth_providers() -> list[str] | None:
    """None without an [auth] section in secrets.toml; else the named providers ([] for one
    unnamed provider: st.login() takes no argument then)."""
    try:
        if "auth" not in st.secrets:
            return None
        section = st.secrets["auth"]
    except Exception:  # no secrets file at all: no login
        return None
    return [name for name, value in section.items() if isinstance(value, Mapping)]


def current_user() -> str | None:
    """The logged-in user's e-mail (else name, else subject), None without a login."""
    if auth_providers() is None:
        return None
    try:
        if not st.user.is_logged_in:
            return None
        return str(st.user.get("email") or st.user.get("name") or st.user.get("sub") or "") or None
    except Exception:
        return None


def require_login() -> None:
    """With [auth] configured, nothing below runs until the visitor has logged in."""
    providers = auth_providers()
    if providers is None:
        return
    if current_user() is not None:
        with st.sidebar:
            st.caption(f":material/person: {current_user()}")
            st.button(_("Log out"), on_click=st.logout, icon=":material/logout:", key="logout")
        return
    st.title("jaxcompare")
    st.info(_("This demo asks you to log in first."), icon=":material/lock:")
    for provider in providers or [None]:
        label = _("Log in with {provider}").format(provider=provider) if provider else _("Log in")
        st.button(label, on_click=st.login, args=(provider,) if provider else (), type="primary",
                  icon=":material/login:", key=f"login_{provider or 'default'}")
    st.stop()


# --- what visitors may see and do with the shared history --------------------------------------------
OPERATOR = "history_operator"
TOKEN_INPUT = "history_token_input"


def _admin_token() -> str | None:
    return os.environ.get("JAXCOMPARE_ADMIN_TOKEN") or None


# Token guesses: five a minute per session, and per client, but a session's first guess is always
# heard, so a visitor guessing from the operator's address (say, the same machine) cannot lock the
# operator out. Reloading for fresh guesses costs a page load each: the token's length is the defence.
TOKEN_GUESSES_PER_MINUTE = 5
_GUESSED = "history_token_guessed"


@st.cache_resource(show_spinner=False)
def _token_attempts() -> tuple[RateLimiter, RateLimiter]:
    return RateLimiter(TOKEN_GUESSES_PER_MINUTE), RateLimiter(TOKEN_GUESSES_PER_MINUTE)  # (session, client)


def history_editable() -> bool:
    """Delete and import: always in local mode; in hosted mode only for a session that entered
    the operator token (JAXCOMPARE_ADMIN_TOKEN), and for nobody without one."""
    return not resources.get_runner().settings.hosted_mode or bool(st.session_state.get(OPERATOR))


def private_details_hidden() -> bool:
    """In hosted mode visitors see no host names or paths of the server."""
    return resources.get_runner().settings.hosted_mode and not st.session_state.get(OPERATOR)


def visible(results: Sequence[Result]) -> list[Result]:
    """Results as this visitor may see them (without the host name and interpreter path)."""
    return [redact(r) for r in results] if private_details_hidden() else list(results)


def visible_env(env: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if env is None or not private_details_hidden():
        return None if env is None else dict(env)
    return {k: v for k, v in env.items() if k not in PRIVATE_ENV}


def _check_token() -> None:
    entered = st.session_state.get(TOKEN_INPUT) or ""
    st.session_state[TOKEN_INPUT] = ""  # the secret does not stay in the session
    token = _admin_token()
    if not entered or token is None:
        return
    per_session, per_client = _token_attempts()
    try:
        per_session.acquire(owner_id().session)
        if st.session_state.get(_GUESSED):
            per_client.acquire(client_id())
        else:  # counted, but never refused: the session's first guess
            with contextlib.suppress(BadInput):
                per_client.acquire(client_id())
    except BadInput:
        st.session_state["history_token_error"] = N_("Too many attempts; try again in a minute.")
        log.warning("operator token: too many attempts, refused: client %s, user %s", client_id(),
                    current_user() or "-")
        return
    st.session_state[_GUESSED] = True
    if hmac.compare_digest(entered.encode(), token.encode()):
        st.session_state[OPERATOR] = True
        st.session_state.pop("history_token_error", None)
        log.info("operator unlocked History: client %s, user %s", client_id(), current_user() or "-")
    else:  # logged, the guess never: an operator sees someone trying
        st.session_state["history_token_error"] = N_("That is not the operator token.")
        log.warning("operator token: a wrong guess: client %s, user %s", client_id(), current_user() or "-")


def log_edit(what: str) -> None:
    """An edit of the shared History (a delete, an import) in the server's log, with who made it, beside
    "operator unlocked History": the log is the only record of who changed it."""
    log.info("History %s: client %s, user %s", what, client_id(), current_user() or "-")


def _lock() -> None:
    st.session_state.pop(OPERATOR, None)


def operator_ui() -> None:
    """Sidebar: in hosted mode, the operator token unlocks delete and import for this session."""
    if not resources.get_runner().settings.hosted_mode:
        return
    st.header(_("Operator"))
    if st.session_state.get(OPERATOR):
        st.caption(_("Unlocked for this session: delete and import are on."))
        st.button(_("Lock"), icon=":material/lock:", on_click=_lock, key="history_lock")
        return
    if _admin_token() is None:
        st.caption(_("History is read-only on this server."))
        return
    st.caption(_("History is read-only for visitors. The operator's token turns on delete and import."))
    st.text_input(_("Operator token"), type="password", key=TOKEN_INPUT, on_change=_check_token)
    if st.session_state.get("history_token_error"):
        st.error(translate_text(st.session_state["history_token_error"]), icon=":material/error:")
