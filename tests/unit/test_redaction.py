"""The rule of what is masked (``durable.redaction``): paths, key names, messages, text,
and the mask a form sends back."""

from __future__ import annotations

import datetime
import logging

from django.test import override_settings
from langchain_core.messages import AIMessage, HumanMessage

from durable import conf
from durable.redaction import (
    MASK,
    RedactingFilter,
    masked_paths,
    redact,
    redact_text,
    redact_under,
    restore,
    value_at,
)

PATHS = ["payment.card_number", "messages.*.additional_kwargs.api_key", "cards.*.cvc"]


def test_the_settings_have_their_documented_defaults():
    assert conf.default("DURABLE_REDACT_PATHS") == ()
    assert conf.default("DURABLE_REDACT_KEYS") == (
        "password",
        "secret",
        "token",
        "api_key",
        "authorization",
    )
    for name in ("DURABLE_REDACT_PATHS", "DURABLE_REDACT_KEYS"):
        assert name in conf.__doc__


@override_settings(DURABLE_REDACT_PATHS=PATHS)
def test_paths_mask_their_value_wherever_the_state_starts():
    state = {"payment": {"card_number": "4111", "amount": 3}, "cards": [{"cvc": "1"}, {"n": 2}]}
    assert redact(state) == {
        "payment": {"card_number": MASK, "amount": 3},
        "cards": [{"cvc": MASK}, {"n": 2}],
    }
    # An update (under its node's name) and an API answer (under "values") alike.
    assert redact({"node": state})["node"]["payment"]["card_number"] == MASK
    assert redact([{"values": state}])[0]["values"]["cards"][0]["cvc"] == MASK
    # The value given is not changed.
    assert state["payment"]["card_number"] == "4111"
    assert masked_paths(state) == ["payment.card_number", "cards.0.cvc"]
    # A channel's write, shaped apart from its state key.
    assert redact_under("payment", {"card_number": "4111"}) == {"card_number": MASK}


@override_settings(DURABLE_REDACT_PATHS=PATHS)
def test_messages_are_masked_as_objects_as_dicts_and_alone():
    secret = "sk-in-a-message"
    state = {
        "messages": [
            HumanMessage("hi", additional_kwargs={"api_key": secret}),
            AIMessage("yo", additional_kwargs={"other": "kept"}),
        ]
    }
    masked = redact(state)
    assert masked["messages"][0]["additional_kwargs"]["api_key"] == MASK
    assert masked["messages"][1]["additional_kwargs"]["other"] == "kept"
    assert masked["messages"][0]["content"] == "hi"
    # A message streamed alone, without its list, matches the path's tail.
    alone = {"type": "ai", "content": "x", "additional_kwargs": {"api_key": secret}}
    assert redact([alone, {"langgraph_node": "n"}])[0]["additional_kwargs"]["api_key"] == MASK
    assert secret not in repr(masked)


def test_key_names_match_as_words_case_insensitively():
    value = {
        "password": "p",
        "DB_PASSWORD": "p",
        "clientSecret": "s",
        "access_token": "t",
        "openai_api_key": "k",
        "apiKey": "k",
        "APIKey": "k",
        "x-apikey": "k",
        "Authorization": "Bearer x",
        "input_tokens": 5,
        "max_tokens": 10,
        "keyboard": "kept",
        "nested": [{"refresh_token": "t"}],
        "token": None,
        "secret": "",
    }
    masked = redact(value)
    for key in ("password", "DB_PASSWORD", "clientSecret", "access_token"):
        assert masked[key] == MASK, key
    for key in ("openai_api_key", "apiKey", "APIKey", "x-apikey", "Authorization"):
        assert masked[key] == MASK, key
    assert masked["nested"] == [{"refresh_token": MASK}]
    # Token counts, and names that only contain the letters, stay.
    assert (masked["input_tokens"], masked["max_tokens"], masked["keyboard"]) == (5, 10, "kept")
    # Nothing to hide: no value, or an empty one.
    assert (masked["token"], masked["secret"]) == (None, "")


@override_settings(DURABLE_REDACT_KEYS=["x-*-id"], DURABLE_REDACT_PATHS=[])
def test_a_key_pattern_with_a_wildcard_is_an_fnmatch_pattern_and_replaces_the_defaults():
    masked = redact({"X-Customer-Id": "c1", "password": "p"})
    assert masked == {"X-Customer-Id": MASK, "password": "p"}


def test_leaves_keep_their_type_for_the_encoder_downstream():
    when = datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)
    assert redact({"at": when, "n": 1.5, "ok": True}) == {"at": when, "n": 1.5, "ok": True}


@override_settings(DURABLE_REDACT_PATHS=PATHS)
def test_restore_puts_the_stored_value_where_the_mask_came_back():
    stored = {"payment": {"card_number": "4111", "amount": 3}, "cards": [{"cvc": "1"}]}
    shown = redact(stored)
    edited = {**shown, "payment": {**shown["payment"], "amount": 5}}
    assert restore(edited, stored) == {
        "payment": {"card_number": "4111", "amount": 5},
        "cards": [{"cvc": "1"}],
    }
    # A value changed from the mask is the new value; a mask with nothing stored stays.
    assert restore({"payment": {"card_number": "5555"}}, stored)["payment"]["card_number"] == (
        "5555"
    )
    assert restore({"new": MASK}, stored) == {"new": MASK}
    assert value_at(stored, "cards.0.cvc") == "1"


@override_settings(DURABLE_REDACT_PATHS=PATHS)
def test_text_masks_the_value_after_a_sensitive_name():
    text = (
        "state {'api_key': 'sk-1', 'card_number': '4111 1111', 'n': 1} "
        'Authorization: Bearer abc.def password=hunter2 "token": "t-2" input_tokens kept'
    )
    masked = redact_text(text)
    for secret in ("sk-1", "4111", "abc.def", "hunter2", "t-2"):
        assert secret not in masked, secret
    assert "'n': 1" in masked and "input_tokens kept" in masked


@override_settings(DURABLE_REDACT_PATHS=PATHS)
def test_the_log_filter_masks_arguments_messages_and_tracebacks():
    record = logging.LogRecord(
        "graph", logging.WARNING, __file__, 1, "wrote %s", ({"api_key": "sk-9"},), None
    )
    assert RedactingFilter().filter(record)
    assert record.getMessage() == f"wrote {{'api_key': '{MASK}'}}"
    try:
        raise ValueError("bad password=hunter2")
    except ValueError:
        import sys

        failed = logging.LogRecord(
            "graph", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    RedactingFilter().filter(failed)
    assert "hunter2" not in logging.Formatter().format(failed)
    assert "ValueError" in logging.Formatter().format(failed)


def test_an_error_text_is_masked_after_sensitive_names():
    masked = redact({"error": "ValueError('password=hunter2')", "message": "token: t-1", "x": 1})
    assert "hunter2" not in masked["error"] and "ValueError" in masked["error"]
    assert "t-1" not in masked["message"]
    assert masked["x"] == 1


def test_the_log_filter_leaves_other_arguments_as_they_print():
    error = ValueError("Worker exited prematurely")
    record = logging.LogRecord(
        "celery", logging.ERROR, __file__, 1, "Task handler raised error: %r", (error,), None
    )
    RedactingFilter().filter(record)
    assert (
        record.getMessage() == "Task handler raised error: ValueError('Worker exited prematurely')"
    )
    named = logging.LogRecord(
        "celery",
        logging.INFO,
        __file__,
        1,
        "%(name)s: %(token)s",
        ({"name": "x", "token": "t"},),
        None,
    )
    RedactingFilter().filter(named)
    assert named.getMessage() == f"x: {MASK}"
