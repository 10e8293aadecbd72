"""The SAM template's ApiType rest: one API Gateway REST API instead of the HTTP API and the streaming
Function URL. Every route of the HTTP API has a REST method reaching the same function, or http-stream
where a REST path cannot tell the operations apart; http-stream's methods stream (ResponseTransferMode
STREAM through the response-streaming-invocations URI) and the others are buffered; API Gateway may
invoke every function it routes to; the card and the functions name the REST stage's URL; the
deployment is replaced whenever the routes change; each front exists only with its ApiType.

What cannot be checked here (no AWS account): that API Gateway accepts the streaming integration and
streams http-stream's output, and the deployed routes' behaviour."""

import hashlib
import json
import re

import pytest

from test_template import (OPERATION_FUNCTION, ROOT, RESOURCES, STREAMING, TEMPLATE, api_route_key,
                           api_routes, functions, proto_routes, sam_transform)

STREAM_CRATE = "http-stream"
REST_TYPES = ("AWS::ApiGateway::RestApi", "AWS::ApiGateway::Resource", "AWS::ApiGateway::Method",
              "AWS::ApiGateway::Deployment", "AWS::ApiGateway::Stage", "AWS::ApiGateway::GatewayResponse")
HTTP_TYPES = ("AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage", "AWS::ApiGatewayV2::Integration",
              "AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Authorizer", "AWS::Lambda::Url")
# The routes a REST path part cannot tell apart ({id} and {id}:subscribe are one {taskId} segment;
# POST / carries every JSON-RPC method): they reach http-stream, which serves every operation.
TO_STREAM = {"POST /", "GET /tasks/{}", "GET /{}/tasks/{}"}
ROUTING_TYPES = ("AWS::ApiGateway::Resource", "AWS::ApiGateway::Method", "AWS::ApiGateway::GatewayResponse")


def crate_of(logical_id):
    return {name: crate for crate, (name, _) in functions().items()}[logical_id]


def rest_path(ref):
    """The full path of a REST resource given as its ParentId / ResourceId value."""
    if ref == {"Fn::GetAtt": ["RestApi", "RootResourceId"]}:
        return ""
    res = RESOURCES[ref["Ref"]]
    assert res["Type"] == "AWS::ApiGateway::Resource", ref
    return rest_path(res["Properties"]["ParentId"]) + "/" + res["Properties"]["PathPart"]


def integration_function(integration):
    """The logical id of the function a REST Lambda proxy integration invokes, and whether it streams."""
    uri = integration["Uri"]["Fn::Sub"]
    m = re.fullmatch(r"arn:\$\{AWS::Partition\}:apigateway:\$\{AWS::Region\}:lambda:path/"
                     r"(2015-03-31|2021-11-15)/functions/\$\{(\w+)\.Arn\}/(invocations|response-streaming-invocations)", uri)
    assert m, uri
    version, function, action = m.groups()
    streams = action == "response-streaming-invocations"
    assert version == ("2021-11-15" if streams else "2015-03-31"), uri
    return function, streams


def rest_methods():
    """'METHOD /path' -> (crate, logical id, method resource) of every REST method."""
    out = {}
    for name, res in RESOURCES.items():
        if res["Type"] != "AWS::ApiGateway::Method":
            continue
        props = res["Properties"]
        assert props["RestApiId"] == {"Ref": "RestApi"}, name
        key = f'{props["HttpMethod"]} {rest_path(props["ResourceId"]) or "/"}'
        assert key not in out, f"{key} defined twice"
        function, _ = integration_function(props["Integration"])
        out[key] = (crate_of(function), name, res)
    return out


def shape(key):
    """A route key with its path variables unnamed (`GET /tasks/{id}` -> `GET /tasks/{}`)."""
    return re.sub(r"\{\w+\+?\}", "{}", key)


def test_api_type_parameter_and_conditions():
    param = TEMPLATE["Parameters"]["ApiType"]
    assert param["Default"] == "http" and param["AllowedValues"] == ["http", "rest"]
    conditions = TEMPLATE["Conditions"]
    assert conditions["UseRestApi"] == {"Fn::Equals": [{"Ref": "ApiType"}, "rest"]}
    assert conditions["UseHttpApi"] == {"Fn::Not": [{"Condition": "UseRestApi"}]}


def test_each_front_exists_with_its_api_type_only():
    """The HTTP API, its authorizer and the Function URL with http; the REST API with rest; each
    front's Lambda permissions with it."""
    for name, res in RESOURCES.items():
        if res["Type"] in REST_TYPES:
            assert res.get("Condition") == "UseRestApi", name
        elif res["Type"] in HTTP_TYPES:
            expected = "UseJwtAuthorizer" if res["Type"] == "AWS::ApiGatewayV2::Authorizer" else "UseHttpApi"
            assert res.get("Condition") == expected, name
        elif res["Type"] == "AWS::Lambda::Permission" and res["Properties"]["FunctionName"] in (
                {"Ref": n} for n, _ in functions().values()):
            arn = json.dumps(res["Properties"].get("SourceArn", ""))
            expected = "UseRestApi" if "${RestApi}" in arn else "UseHttpApi"
            assert res.get("Condition") == expected, name
    assert sum(r["Type"] == "AWS::ApiGateway::RestApi" for r in RESOURCES.values()) == 1
    assert RESOURCES["RestApi"]["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}


def test_every_http_api_route_has_a_rest_method_reaching_the_same_function():
    rest = {shape(k): v[0] for k, v in rest_methods().items()}
    for key, crate in api_routes().items():
        got = rest.get(shape(key))
        want = STREAM_CRATE if shape(key) in TO_STREAM else crate
        assert got == want, f"{key}: REST reaches {got}, not {want}"
    assert TO_STREAM <= {shape(k) for k in api_routes()}


def test_every_proto_route_has_a_rest_method_streams_included():
    """The streaming routes too (the HTTP API leaves them to the Function URL): message:stream is a
    literal path part; {id}:subscribe is the {taskId} segment of GET, which http-stream serves."""
    rest = {shape(k): v[0] for k, v in rest_methods().items()}
    for rpc, method, path in proto_routes():
        key = shape(api_route_key(method, path))
        want = STREAM_CRATE if rpc in STREAMING or key in TO_STREAM else OPERATION_FUNCTION[rpc]
        assert rest.get(key) == want, f"{rpc}: {key} -> {rest.get(key)}"
    # Literal path parts with a colon, not a variable plus text.
    paths = {k.split(" ", 1)[1] for k in rest_methods()}
    assert {"/message:send", "/message:stream", "/{tenant}/message:send", "/{tenant}/message:stream"} <= paths
    for path in paths:
        for part in path.strip("/").split("/"):
            assert re.fullmatch(r"\{\w+\+?\}|[A-Za-z0-9._:-]*", part), f"{path}: {part!r}"
    # The playground (http-stream's own routes when Playground is on).
    for key in ("ANY /playground", "ANY /playground/{proxy+}"):
        assert rest_methods()[key][0] == STREAM_CRATE, key


def test_streaming_methods_stream_and_the_others_are_buffered():
    for key, (crate, name, res) in rest_methods().items():
        props = res["Properties"]
        integration = props["Integration"]
        assert props["AuthorizationType"] == "NONE", f"{key}: the functions authenticate"
        assert "AuthorizerId" not in props and not props.get("ApiKeyRequired"), key
        assert integration["Type"] == "AWS_PROXY" and integration["IntegrationHttpMethod"] == "POST", key
        _, streams = integration_function(integration)
        if crate == STREAM_CRATE:
            assert streams, f"{key}: http-stream through response-streaming-invocations"
            assert integration["ResponseTransferMode"] == "STREAM", key
            # Up to the function's own timeout (900 s, the 15 minutes a stream may last).
            _, fn = functions()[STREAM_CRATE]
            assert 29000 < integration["TimeoutInMillis"] <= fn["Properties"]["Timeout"] * 1000, key
        else:
            assert not streams, key
            assert integration.get("ResponseTransferMode", "BUFFERED") == "BUFFERED", key
            assert integration["TimeoutInMillis"] == 29000, key


def test_api_gateway_may_invoke_every_function_the_rest_api_reaches():
    permitted = {}
    for name, res in RESOURCES.items():
        props = res["Properties"]
        if res["Type"] == "AWS::Lambda::Permission" and "${RestApi}" in json.dumps(props.get("SourceArn", "")):
            assert props["Principal"] == "apigateway.amazonaws.com" and props["Action"] == "lambda:InvokeFunction", name
            assert props["SourceArn"] == {
                "Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${RestApi}/*"}, name
            permitted[props["FunctionName"]["Ref"]] = name
    reached = {integration_function(res["Properties"]["Integration"])[0] for _, _, res in rest_methods().values()}
    assert reached == set(permitted), f"missing: {reached - set(permitted)}, unused: {set(permitted) - reached}"


def routing_digest():
    """What a deployment of the REST API captures: its resources, methods and gateway responses."""
    routing = {n: r for n, r in RESOURCES.items() if r["Type"] in ROUTING_TYPES}
    return hashlib.sha256(json.dumps(routing, sort_keys=True).encode()).hexdigest()[:10]


def test_the_deployment_is_replaced_when_the_routes_change():
    """CloudFormation deploys a REST API only when an AWS::ApiGateway::Deployment is created: its
    logical id carries a digest of the routes, as SAM's own APIs do."""
    (name,) = [n for n, r in RESOURCES.items() if r["Type"] == "AWS::ApiGateway::Deployment"]
    assert name == f"RestApiDeployment{routing_digest()}", (
        f"the REST routes changed: rename {name} to RestApiDeployment{routing_digest()} (and in RestApiStage)")
    waits = set(RESOURCES[name]["DependsOn"])
    assert waits == {n for n, r in RESOURCES.items() if r["Type"] in ROUTING_TYPES[1:]}
    stage = RESOURCES["RestApiStage"]["Properties"]
    assert stage["DeploymentId"] == {"Ref": name} and stage["RestApiId"] == {"Ref": "RestApi"}
    assert stage["MethodSettings"] == [{"ResourcePath": "/*", "HttpMethod": "*",
                                        "ThrottlingBurstLimit": 500, "ThrottlingRateLimit": 1000}]
    missing = RESOURCES["RestApiNotFoundResponse"]["Properties"]
    assert (missing["ResponseType"], missing["StatusCode"]) == ("MISSING_AUTHENTICATION_TOKEN", "404")


def rest_url(suffix=""):
    stage = RESOURCES["RestApiStage"]["Properties"]["StageName"]
    return {"Fn::Sub": "https://${RestApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/" + stage + suffix}


HTTP_URL = {"Fn::Sub": "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"}


def test_the_card_and_the_outputs_name_the_rest_stage_url():
    """Every function (http-stream included: no Function URL with rest) gets A2A_PUBLIC_URL, the URL
    its card's interfaces name: PublicUrl, else the REST stage's URL or the HTTP API's. REST events
    name the stage beside a path without it; AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH keeps lambda_http
    from putting it back in front of the path."""
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    public = {"Fn::If": ["HasPublicUrl", {"Ref": "PublicUrl"}, {"Fn::If": ["UseRestApi", rest_url(), HTTP_URL]}]}
    assert env["A2A_PUBLIC_URL"] == public
    assert env["AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH"] == {"Fn::If": ["UseRestApi", "true", {"Ref": "AWS::NoValue"}]}
    for name, res in RESOURCES.items():
        if res["Type"] == "AWS::Serverless::Function":
            overrides = res["Properties"].get("Environment", {}).get("Variables", {})
            assert not {"A2A_PUBLIC_URL", "AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH"} & set(overrides), name
    deployed = [r for r in sam_transform({"ApiType": "rest"}).values() if r["Type"] == "AWS::Lambda::Function"]
    assert deployed
    for fn in deployed:
        assert fn["Properties"]["Environment"]["Variables"]["A2A_PUBLIC_URL"] == public
    outputs = TEMPLATE["Outputs"]
    assert outputs["ApiUrl"]["Value"] == {"Fn::If": ["UseRestApi", rest_url(), HTTP_URL]}
    assert outputs["StreamUrl"]["Value"] == {
        "Fn::If": ["UseRestApi", rest_url(), {"Fn::GetAtt": ["HttpStreamUrl", "FunctionUrl"]}]}
    assert outputs["JwksUrl"]["Value"] == {"Fn::If": [
        "UseRestApi", rest_url("/.well-known/jwks.json"),
        {"Fn::Sub": "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/.well-known/jwks.json"}]}


def test_the_stream_function_verifies_tokens_itself():
    """No JWT authorizer in front of it on either front: with rest, jwt is verified in every function."""
    env = RESOURCES["HttpStreamFunction"]["Properties"]["Environment"]["Variables"]
    assert env["OIDC_VERIFIED_BY_GATEWAY"] == "false"
    globals_env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    # UseJwtAuthorizer (HTTP API and jwt) is false with rest: every function verifies.
    assert globals_env["OIDC_VERIFIED_BY_GATEWAY"] == {"Fn::If": ["UseJwtAuthorizer", "true", "false"]}


@pytest.mark.parametrize("name", ["apigw-rest_stream_message.json", "apigw-rest_stream_subscribe.json"])
def test_rest_fixtures_match_the_template(name):
    """events/apigw-rest_*.json are what the REST API sends http-stream (payload 1.0): a route of
    this template reaching http-stream, its stage, and the path without the stage."""
    event = json.loads((ROOT / "events" / name).read_text())
    ctx = event["requestContext"]
    stage = RESOURCES["RestApiStage"]["Properties"]["StageName"]
    assert ctx["stage"] == stage and ctx["path"] == f"/{stage}{event['path']}"
    assert event["resource"] == ctx["resourcePath"] and event["httpMethod"] == ctx["httpMethod"]
    crate, _, _ = rest_methods()[f"{event['httpMethod']} {event['resource']}"]
    assert crate == STREAM_CRATE
    # The path variables API Gateway extracted: the resource's with the path's values.
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(event["resource"]))
    assert re.fullmatch(pattern, event["path"]).groupdict() == (event["pathParameters"] or {})
    assert event["headers"]["Accept"] == "text/event-stream"
