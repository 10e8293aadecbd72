"""The `a2a` command line (and so the client library) against an agent built with the official
Python SDK (a2a-sdk 1.x server, tests/cli/sdk_agent.py), over JSON-RPC, HTTP+JSON and gRPC: the card,
blocking and streaming sends, multi-turn, cancel, subscribe, list and a protocol error."""

import time

import pytest
from test_cli import BINDINGS, lines, run


@pytest.mark.parametrize("binding", BINDINGS)
def test_every_command_against_the_official_sdk(sdk, binding):
    b = ["--json", "--binding", binding]
    (card,) = lines(run(*b, "card", sdk))
    assert card["name"] == "SDK test agent"
    (task,) = lines(run(*b, "send", sdk, "hello sdk"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "hello sdk"
    streamed = lines(run(*b, "send", sdk, "slow a b c", "--stream"))
    assert [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in streamed if "artifactUpdate" in e] == ["a ", "b ", "c "]
    assert streamed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    asked = run(*b, "send", sdk, "ask me")
    assert asked.returncode == 6
    (asked,) = lines(asked)
    (answered,) = lines(run(*b, "send", sdk, "Ada", "--task", asked["id"], "--context", asked["contextId"]))
    assert answered["artifacts"][0]["parts"][0]["text"] == "Hello, Ada!"
    (slow,) = lines(run(*b, "send", sdk, "slow a b c d e f g h", "--no-wait"))
    time.sleep(0.5)
    (canceled,) = lines(run(*b, "cancel", sdk, slow["id"]))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    (slow,) = lines(run(*b, "send", sdk, "slow x y", "--no-wait"))
    followed = lines(run(*b, "subscribe", sdk, slow["id"]))
    assert followed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    (listed,) = lines(run(*b, "list", sdk, "--context", task["contextId"]))
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    missing = run(*b, "get", sdk, "no-such-task")
    assert missing.returncode == 4 and "TASK_NOT_FOUND" in missing.stderr
