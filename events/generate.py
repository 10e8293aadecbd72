#!/usr/bin/env python3
"""Writes the Lambda event fixtures of events/: API Gateway HTTP API (payload 2.0) and Function URL
events for the HTTP functions, API Gateway REST API (payload 1.0) events for http-stream behind the
SAM template's ApiType rest, SQS batches for the queue functions. Realistic (the shape AWS sends)
and consistent with each other: the fixture task is the one `apigw-v2_send-message_ok.json` creates,
whose id is derived from (principal, messageId) the way the engine derives it. Run from the repo root:
    python3 events/generate.py"""

import base64
import json
import pathlib
import uuid

HERE = pathlib.Path(__file__).parent
NAMESPACE = uuid.UUID(int=0x6A2A5E11_1E55_4A2A_8000_0000_0000A2A0)
MESSAGE_ID = "fixture-message-1"
TASK_ID = str(uuid.uuid5(NAMESPACE, "anonymous\0" + MESSAGE_ID))
EPOCH = 1763800000000


def client_headers(host, trace, body, cased=str.lower):
    """The headers a client's request arrives with (names spelled by `cased`)."""
    h = {
        "accept": "application/json",
        "a2a-version": "1.0",
        "host": host,
        "user-agent": "python-httpx/0.28.1",
        "x-amzn-trace-id": f"Root=1-6921a2a0-0123456789abcdef{trace}",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None:
        h["content-type"] = "application/json"
        h["content-length"] = str(len(json.dumps(body)))
    return {cased(k): v for k, v in h.items()}


def http_event(method, path, body=None, query="", headers=None, function_url=False, route_key=None, jwt=None):
    host = "abcdef123.execute-api.us-east-1.amazonaws.com" if not function_url else "abc123.lambda-url.us-east-1.on.aws"
    h = client_headers(host, "01234567", body)
    h.update(headers or {})
    ctx = {
        "accountId": "123456789012" if not function_url else "anonymous",
        "apiId": "abcdef123" if not function_url else "abc123",
        "domainName": h["host"],
        "domainPrefix": h["host"].split(".")[0],
        "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7", "userAgent": h["user-agent"]},
        "requestId": str(uuid.uuid4()) if False else "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
        "routeKey": route_key or ("$default" if function_url else f"{method} {path}"),
        "stage": "$default",
        "time": "22/Nov/2026:03:00:00 +0000",
        "timeEpoch": EPOCH,
    }
    if jwt is not None:
        # What API Gateway's JWT authorizer passes on (HTTP API, payload 2.0): the verified claims,
        # every value a string.
        ctx["authorizer"] = {"jwt": {"claims": jwt, "scopes": None}}
    event = {
        "version": "2.0",
        "routeKey": ctx["routeKey"],
        "rawPath": path,
        "rawQueryString": query,
        "headers": h,
        "requestContext": ctx,
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = dict(p.split("=", 1) for p in query.split("&"))
    if body is not None:
        event["body"] = json.dumps(body)
    return event


# The REST API's stage (infra/template.yaml, RestApiStage): in the URL and in requestContext, not in
# the event's path (lambda_http puts it back in front unless AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH is set).
REST_STAGE = "a2a"


def rest_event(method, path, resource, body=None, headers=None, path_parameters=None):
    """What an API Gateway REST API sends a Lambda proxy integration (payload 1.0), streaming or not:
    headers as the client spelled them, each also in multiValueHeaders; the matched resource and its
    path variables; the stage beside a path without it."""
    host = "abcdef456.execute-api.us-east-1.amazonaws.com"
    h = client_headers(host, "01234568", body, cased=str.title)
    h.update(headers or {})
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": h,
        "multiValueHeaders": {k: [v] for k, v in h.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "resourceId": "r3s0ur",
            "resourcePath": resource,
            "httpMethod": method,
            "extendedRequestId": "Fx1aAbCdIAMEXAMPLE=",
            "requestTime": "22/Nov/2026:03:00:00 +0000",
            "path": f"/{REST_STAGE}{path}",
            "accountId": "123456789012",
            "protocol": "HTTP/1.1",
            "stage": REST_STAGE,
            "domainPrefix": host.split(".")[0],
            "requestTimeEpoch": EPOCH,
            "requestId": "d7bf0bd7-8c72-42f7-9b52-a4f9deadbeef",
            "identity": {
                "cognitoIdentityPoolId": None,
                "accountId": None,
                "cognitoIdentityId": None,
                "caller": None,
                "sourceIp": "203.0.113.7",
                "principalOrgId": None,
                "accessKey": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "userArn": None,
                "userAgent": h["User-Agent"],
                "user": None,
            },
            "domainName": host,
            "deploymentId": "d3pl0y",
            "apiId": host.split(".")[0],
        },
        "body": None if body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


def message(message_id, text="hello from a fixture", **extra):
    return {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def sqs_record(i, body, group, queue, receive_count=1):
    return {
        "messageId": f"0a0b0c0d-0000-4000-8000-00000000000{i}",
        "receiptHandle": f"AQEB{i}fixturereceipthandle==",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": str(EPOCH),
            "SequenceNumber": f"1888{i:016d}",
            "MessageGroupId": group,
            "SenderId": "AROAEXAMPLE:a2a",
            "MessageDeduplicationId": f"dedup-{i}",
            "ApproximateFirstReceiveTimestamp": str(EPOCH + 5),
        },
        "messageAttributes": {},
        "md5OfBody": "d41d8cd98f00b204e9800998ecf8427e",
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:{queue}",
        "awsRegion": "us-east-1",
    }


# The claims of a Cognito client-credentials access token, as the JWT authorizer passes them on.
COGNITO_CLAIMS = {
    "sub": "4lice0client0id0000000000",
    "client_id": "4lice0client0id0000000000",
    "token_use": "access",
    "scope": "a2a/call",
    "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE",
    "exp": "1763803600",
    "iat": "1763800000",
    "jti": "9b5a1c9e-3f1e-4d5e-9a0b-1c2d3e4f5a6b",
    "version": "2",
}

fixtures = {
    "apigw-v2_send-message_jwt-authorizer.json": http_event("POST", "/message:send", {"message": message("fixture-message-jwt"), "configuration": {"returnImmediately": True}}, headers={"authorization": "Bearer eyJraWQiOiJleGFtcGxlIn0.verified-by-the-gateway.sig"}, jwt=COGNITO_CLAIMS),
    "apigw-v2_send-message_ok.json": http_event("POST", "/message:send", {"message": message(MESSAGE_ID), "configuration": {"returnImmediately": True}}),
    "apigw-v2_send-message_tenant.json": http_event("POST", "/acme/message:send", {"message": message("fixture-message-2"), "configuration": {"returnImmediately": True}}, route_key="POST /{tenant}/message:send"),
    "apigw-v2_send-message_bad-request.json": http_event("POST", "/message:send", {"message": {"role": "ROLE_USER", "parts": [{"text": "no id"}]}}),
    "apigw-v2_get-task_ok.json": http_event("GET", f"/tasks/{TASK_ID}", query="historyLength=1", route_key="GET /tasks/{id}"),
    "apigw-v2_get-task_not-found.json": http_event("GET", "/tasks/does-not-exist", route_key="GET /tasks/{id}"),
    "apigw-v2_list-tasks_ok.json": http_event("GET", "/tasks", query="pageSize=10&status=submitted"),
    "apigw-v2_cancel-task_ok.json": http_event("POST", f"/tasks/{TASK_ID}:cancel", {}, route_key="POST /tasks/{id}:cancel"),
    "apigw-v2_create-push-config_ok.json": http_event("POST", f"/tasks/{TASK_ID}/pushNotificationConfigs", {"id": "fixture-config", "url": "https://93.184.216.34/a2a", "token": "fixture-token"}, route_key="POST /tasks/{taskId}/pushNotificationConfigs"),
    "apigw-v2_get-push-config_ok.json": http_event("GET", f"/tasks/{TASK_ID}/pushNotificationConfigs/fixture-config", route_key="GET /tasks/{taskId}/pushNotificationConfigs/{id}"),
    "apigw-v2_list-push-configs_ok.json": http_event("GET", f"/tasks/{TASK_ID}/pushNotificationConfigs", route_key="GET /tasks/{taskId}/pushNotificationConfigs"),
    "apigw-v2_delete-push-config_ok.json": http_event("DELETE", f"/tasks/{TASK_ID}/pushNotificationConfigs/fixture-config", route_key="DELETE /tasks/{taskId}/pushNotificationConfigs/{id}"),
    "apigw-v2_extended-card_unsupported.json": http_event("GET", "/extendedAgentCard"),
    "apigw-v2_agent-card_ok.json": http_event("GET", "/.well-known/agent-card.json"),
    "function-url_agent-card_not-modified.json": http_event("GET", "/.well-known/agent-card.json", headers={"if-none-match": "*"}, function_url=True),
    "apigw-v2_jsonrpc_get-task.json": http_event("POST", "/", {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": TASK_ID}}, route_key="POST /"),
    "apigw-v2_jsonrpc_message-send-0.3.json": http_event("POST", "/", {"jsonrpc": "2.0", "id": "r1", "method": "message/send", "params": {"message": {"kind": "message", "messageId": "fixture-message-03", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}, "configuration": {"blocking": False}}}, headers={"a2a-version": ""}, route_key="POST /"),
    "apigw-v2_jsonrpc_wrong-route.json": http_event("GET", f"/tasks/{TASK_ID}", route_key="GET /tasks/{id}"),
    "function-url_stream_subscribe.json": http_event("GET", f"/tasks/{TASK_ID}:subscribe", headers={"accept": "text/event-stream", "last-event-id": "0"}, function_url=True),
    "function-url_stream_message.json": http_event("POST", "/message:stream", {"message": message("fixture-stream-1")}, headers={"accept": "text/event-stream"}, function_url=True),
    # ApiType rest: the REST API's STREAM integrations of http-stream. {id}:subscribe is the whole {taskId} segment.
    "apigw-rest_stream_message.json": rest_event("POST", "/message:stream", "/message:stream", {"message": message("fixture-stream-rest-1")}, headers={"Accept": "text/event-stream"}),
    "apigw-rest_stream_subscribe.json": rest_event("GET", f"/tasks/{TASK_ID}:subscribe", "/tasks/{taskId}", headers={"Accept": "text/event-stream", "Last-Event-ID": "0"}, path_parameters={"taskId": f"{TASK_ID}:subscribe"}),
    "sqs_task-runner_batch.json": {"Records": [
        sqs_record(1, json.dumps({"type": "execute", "taskId": TASK_ID, "messageId": MESSAGE_ID}), TASK_ID, "a2a-tasks-work.fifo"),
        sqs_record(2, "{not json: a poison record", "poison-group", "a2a-tasks-work.fifo", receive_count=3),
        sqs_record(3, json.dumps({"type": "cancel", "taskId": "unknown-task"}), "cancel-unknown-task", "a2a-tasks-work.fifo"),
    ]},
    "sqs_push-delivery_batch.json": {"Records": [
        sqs_record(1, json.dumps({"taskId": TASK_ID, "configId": "fixture-config", "seq": 1}), f"{TASK_ID}#fixture-config", "a2a-tasks-push.fifo"),
        sqs_record(2, "poison", "poison-group", "a2a-tasks-push.fifo", receive_count=2),
        sqs_record(3, json.dumps({"taskId": TASK_ID, "configId": "deleted-config", "seq": 1}), f"{TASK_ID}#deleted-config", "a2a-tasks-push.fifo"),
    ]},
}

for name, event in fixtures.items():
    (HERE / name).write_text(json.dumps(event, indent=2) + "\n")
print(f"{len(fixtures)} fixtures; fixture task id {TASK_ID}")
