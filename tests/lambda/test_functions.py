"""The Lambda functions' own binaries under a Runtime API on loopback (runtime_api.py), on moto:

- `http-stream` behind an API Gateway REST API with response streaming (`ApiType: rest`): given the
  REST API's (v1) event for `POST /message:stream`, it answers in the format the REST streaming
  integration documents: a JSON prelude (statusCode, headers), eight NUL bytes, then the payload,
  here the SSE events of the task up to its end (run by `a2a-local --store aws` on the same table,
  as the task-runner function would); and the routes the REST API sends it because their paths
  cannot be told from streams (GetTask on `GET /tasks/{taskId}`, JSON-RPC on `POST /`), buffered
  answers in the same format.
- Lambda Managed Instances: with `AWS_LAMBDA_MAX_CONCURRENCY` set, a function takes several
  invocations at once; each answer is its own request's (no state shared between invocations), and
  without the variable it takes them one by one."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from runtime_api import RuntimeApi  # noqa: E402
from support import a2a_local, stop  # noqa: E402

ROOT = Path(__file__).parents[2]
LOGS = Path(os.environ.get("A2A_TEST_LOGS", "/tmp"))


def binary(name):
    path = Path(os.environ["CARGO_TARGET_DIR"]) / "debug" / name
    assert path.exists(), f"{path} is not built (scripts/test builds the functions it runs)"
    return str(path)


@pytest.fixture(scope="module")
def aws():
    """A table and its queues on moto, as the SAM stack would give: the functions' environment."""
    assert os.environ.get("AWS_ENDPOINT_URL"), "AWS_ENDPOINT_URL (moto) is not set: run through scripts/test"
    table = f"fn-{uuid.uuid4().hex[:10]}"
    out = subprocess.run([os.environ["A2A_LOCAL_BIN"], "--store", "aws", "--create-resources-only"],
                         env=os.environ | {"TABLE_NAME": table}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    env = dict(line.split("=", 1) for line in out.stdout.split() if "=" in line)
    return {"TABLE_NAME": table, **env, "PAGE_TOKEN_SECRET": "local", "A2A_PUBLIC_URL": "https://api.example.test"}


def start_function(name, api, aws, log_name, extra=None):
    log = open(LOGS / f"lambda-{log_name}.log", "w")
    env = os.environ | aws | {
        "AWS_LAMBDA_RUNTIME_API": api.address,
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "test",
    }
    env.pop("AWS_LAMBDA_MAX_CONCURRENCY", None)
    env |= extra or {}
    return subprocess.Popen([binary(name)], env=env, stdout=log, stderr=subprocess.STDOUT)


def fixture(name):
    return json.loads((ROOT / "events" / name).read_text())


def rest_event(fixture_name, method, path, body=None, accept=None):
    """A REST API (payload 1.0) event like the fixture's, for another method, path and body."""
    event = fixture(fixture_name)
    event["httpMethod"] = event["requestContext"]["httpMethod"] = method
    event["path"] = path
    event["requestContext"]["path"] = f"/{event['requestContext']['stage']}{path}"
    event["requestContext"]["requestId"] = str(uuid.uuid4())
    event["headers"] = {k: v for k, v in event["headers"].items() if k.lower() not in ("accept", "last-event-id")}
    event["headers"]["Content-Type"] = "application/json"
    if accept:
        event["headers"]["Accept"] = accept
    event["multiValueHeaders"] = {k: [v] for k, v in event["headers"].items()}
    event["body"] = None if body is None else json.dumps(body)
    return event


def framed(answer):
    """The REST streaming integration's format: (prelude, payload)."""
    assert not answer.error, answer.body
    assert answer.headers["lambda-runtime-function-response-mode"] == "streaming"
    assert answer.headers["content-type"] == "application/vnd.awslambda.http-integration-response"
    prelude, sep, payload = answer.body.partition(b"\0" * 8)
    assert sep, "the JSON prelude ends with eight NUL bytes"
    meta = json.loads(prelude)
    assert set(meta) <= {"statusCode", "headers", "multiValueHeaders", "cookies"}, meta
    return meta, payload


def test_the_stream_function_answers_in_the_rest_apis_streaming_format(aws):
    event = fixture("apigw-rest_stream_message.json")
    assert event["requestContext"]["stage"] and "rawPath" not in event, "a REST API (payload 1.0) event"
    body = json.loads(event["body"])
    body["message"]["messageId"] = str(uuid.uuid4())
    event["body"] = json.dumps(body)
    api = RuntimeApi()
    runner_log = open(LOGS / "lambda-rest-stream-runner.log", "w")
    _, runner = a2a_local(["--store", "aws"], log=runner_log, env=aws)
    # The template sets this with ApiType rest: the stage is not part of the routes' paths.
    function = start_function("http-stream", api, aws, "rest-stream", {"AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH": "true"})
    try:
        (streamed,) = api.wait([api.invoke(event)], 60)
        meta, payload = framed(streamed)
        assert meta["statusCode"] == 200, meta
        assert meta["headers"]["content-type"].startswith("text/event-stream"), meta
        events = [json.loads(line[len("data: "):]) for line in payload.decode().splitlines()
                  if line.startswith("data: ")]
        assert "task" in events[0], events[0]
        assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events[-1]
        assert b"\0" not in payload, "one prelude, then the payload as it is"
        # The routes the REST API sends here because its paths cannot tell them from streams:
        # GetTask on GET /tasks/{taskId}, and JSON-RPC on POST /, buffered answers in the same format.
        task_id = events[0]["task"]["id"]
        rpc = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": task_id}}
        got, called = api.wait([api.invoke(rest_event("apigw-rest_stream_subscribe.json", "GET", f"/tasks/{task_id}")),
                                api.invoke(rest_event("apigw-rest_stream_message.json", "POST", "/", rpc))], 60)
    finally:
        stop(function, runner)
        api.close()
        runner_log.close()
    meta, payload = framed(got)
    assert meta["statusCode"] == 200 and meta["headers"]["content-type"].startswith("application/json"), meta
    assert json.loads(payload)["status"]["state"] == "TASK_STATE_COMPLETED"
    meta, payload = framed(called)
    assert meta["statusCode"] == 200, meta
    answer = json.loads(payload)
    assert answer["id"] == 7 and answer["result"]["id"] == task_id, answer


def send_event(text):
    event = fixture("apigw-v2_send-message_ok.json")
    event["body"] = json.dumps({"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                                            "parts": [{"text": text}]}, "configuration": {"returnImmediately": True}})
    event["requestContext"]["requestId"] = str(uuid.uuid4())
    return event


def get_event(task_id):
    event = fixture("apigw-v2_get-task_ok.json")
    old = event["rawPath"].rsplit("/", 1)[1]
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/tasks/{task_id}"
    if event.get("pathParameters"):
        event["pathParameters"] = {k: task_id if v == old else v for k, v in event["pathParameters"].items()}
    event["requestContext"]["requestId"] = str(uuid.uuid4())
    return event


def run(name, events, aws, log_name, concurrency=None):
    api = RuntimeApi()
    ids = [api.invoke(e) for e in events]
    extra = {"AWS_LAMBDA_MAX_CONCURRENCY": str(concurrency)} if concurrency else {}
    function = start_function(name, api, aws, log_name, extra)
    try:
        answers = api.wait(ids, 60)
    finally:
        stop(function)
        api.close()
    for a in answers:
        assert not a.error and a.json()["statusCode"] == 200, a.body
    return [json.loads(a.json()["body"]) for a in answers], api.max_in_flight


def test_managed_instances_run_invocations_at_once_each_answering_its_own(aws):
    texts = [f"concurrent message {i} {uuid.uuid4()}" for i in range(32)]
    sent, at_once = run("http-send-message", [send_event(t) for t in texts], aws, "concurrent-send", 8)
    assert at_once > 1, f"the function took {at_once} invocation at a time with AWS_LAMBDA_MAX_CONCURRENCY=8"
    tasks = [s["task"] for s in sent]
    assert [t["history"][0]["parts"][0]["text"] for t in tasks] == texts, "each answer is its own request's"
    assert len({t["id"] for t in tasks}) == len(texts)
    got, at_once = run("http-get-task", [get_event(t["id"]) for t in tasks], aws, "concurrent-get", 8)
    assert at_once > 1
    assert [(g["id"], g["history"][0]["parts"][0]["text"]) for g in got] == [(t["id"], t["history"][0]["parts"][0]["text"]) for t in tasks]
    # Without the variable (Lambda on demand): one invocation at a time, as before.
    _, at_once = run("http-get-task", [get_event(t["id"]) for t in tasks[:6]], aws, "sequential-get")
    assert at_once == 1
