"""The SAM template is complete and least-privilege: every function crate is deployed with
cargo-lambda, every `google.api.http` route of the A2A proto reaches the function of its operation,
every queue has a dead-letter queue and an event source mapping with partial batch failures and a
visibility timeout longer than its consumer's, and no IAM statement uses `*`. Every function gets the
observability settings (OTEL_* and A2A_METRICS* variables, Lambda's X-Ray mode, the optional collector
layer), and the dashboard and the alarms query the EMF metrics with the dimensions the functions emit.

The proto is the normative A2A 1.0.1 proto the gRPC binding is built from (shared/grpc/proto/a2a.proto)."""

import json
import re
from pathlib import Path

import pytest
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE, errors = decode(str(ROOT / "infra" / "template.yaml"))
assert not errors, errors
RESOURCES = TEMPLATE["Resources"]
GLOBALS = TEMPLATE["Globals"]["Function"]

# The function of each non-streaming operation.
OPERATION_FUNCTION = {
    "SendMessage": "http-send-message",
    "GetTask": "http-get-task",
    "ListTasks": "http-list-tasks",
    "CancelTask": "http-cancel-task",
    "CreateTaskPushNotificationConfig": "http-create-push-config",
    "GetTaskPushNotificationConfig": "http-get-push-config",
    "ListTaskPushNotificationConfigs": "http-list-push-configs",
    "DeleteTaskPushNotificationConfig": "http-delete-push-config",
    "GetExtendedAgentCard": "http-extended-card",
}
STREAMING = {"SendStreamingMessage", "SubscribeToTask"}
NOT_LAMBDA = {"local", "edge-worker"}


def functions():
    """crate name -> (logical id, resource) of every function built from this workspace."""
    out = {}
    for name, res in RESOURCES.items():
        if res["Type"] == "AWS::Serverless::Function" and res.get("Metadata", {}).get("BuildMethod") == "rust-cargolambda":
            out[res["Metadata"]["BuildProperties"]["Binary"]] = (name, res)
    return out


def proto_routes():
    """(rpc, http method, path) of every google.api.http binding in the proto."""
    text = (ROOT / "shared" / "grpc" / "proto" / "a2a.proto").read_text()
    routes = []
    for m in re.finditer(r"rpc (\w+)\(.*?\{(.*?)\n  \}", text, re.S):
        rpc, body = m.group(1), m.group(2)
        for method, path in re.findall(r"\b(get|post|put|delete|patch): \"([^\"]+)\"", body):
            routes.append((rpc, method.upper(), path))
    assert len(routes) >= 22, routes
    return routes


def api_route_key(method, path):
    """API Gateway route key of a proto path: `{id=*}` → `{id}`; a variable with a `:verb` suffix
    becomes the whole segment (API Gateway path variables are whole segments)."""
    path = re.sub(r"\{(\w+)=\*\}", r"{\1}", path)
    path = re.sub(r"\{(\w+)\}:\w+", r"{\1}", path)
    path = path.replace("{task_id}", "{taskId}")
    return f"{method} {path}"


def api_routes():
    """API Gateway route key -> crate of the function its integration invokes."""
    crate_of = {name: crate for crate, (name, _) in functions().items()}
    out = {}
    for res in RESOURCES.values():
        if res["Type"] != "AWS::ApiGatewayV2::Route":
            continue
        key = res["Properties"]["RouteKey"]
        target = res["Properties"]["Target"]["Fn::Sub"]
        integration = RESOURCES[re.fullmatch(r"integrations/\$\{(\w+)\}", target).group(1)]["Properties"]
        assert integration["IntegrationType"] == "AWS_PROXY" and integration["PayloadFormatVersion"] == "2.0"
        function = integration["IntegrationUri"]["Fn::GetAtt"][0]
        assert key not in out, f"{key} routed twice"
        out[key] = crate_of[function]
    return out


def sam_transform(parameters=None, template=None):
    """The template after the SAM transform (what CloudFormation deploys), with these parameter values."""
    import copy
    import os

    from samtranslator.translator.transform import transform

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    template = copy.deepcopy(TEMPLATE if template is None else template)
    for res in template["Resources"].values():
        if res["Type"] == "AWS::Serverless::Function":
            res["Properties"]["CodeUri"] = "s3://bucket/key"  # what `sam package` puts there

    class NoManagedPolicies:
        def load(self):
            return {}

    return transform(template, dict(parameters or {}), NoManagedPolicies())["Resources"]


def test_every_function_crate_is_deployed_with_cargo_lambda():
    crates = {p.name for p in (ROOT / "functions").iterdir() if (p / "Cargo.toml").exists()} - NOT_LAMBDA
    deployed = functions()
    assert crates == set(deployed), f"missing: {crates - set(deployed)}, unknown: {set(deployed) - crates}"
    for crate, (name, res) in deployed.items():
        assert res["Metadata"]["BuildMethod"] == "rust-cargolambda", name
        assert res["Properties"]["CodeUri"] == "..", name
    assert GLOBALS["Runtime"] == "provided.al2023"
    arch = TEMPLATE["Parameters"]["Architecture"]
    assert arch["Default"] == "arm64" and set(arch["AllowedValues"]) == {"arm64", "x86_64"}


def test_every_proto_route_reaches_its_function():
    by_route = api_routes()
    for rpc, method, path in proto_routes():
        if rpc in STREAMING:
            continue  # the streaming Function URL takes every path (next test)
        key = api_route_key(method, path)
        assert by_route.get(key) == OPERATION_FUNCTION[rpc], f"{rpc}: {key} -> {by_route.get(key)}"
    assert by_route.get("POST /") == "http-jsonrpc"
    assert by_route.get("GET /.well-known/agent-card.json") == "http-agent-card"
    assert by_route.get("GET /.well-known/agent.json") == "http-agent-card"
    assert by_route.get("GET /.well-known/jwks.json") == "http-agent-card"


def test_every_routed_function_may_be_invoked_by_the_api():
    permitted = {r["Properties"]["FunctionName"]["Ref"] for r in RESOURCES.values()
                 if r["Type"] == "AWS::Lambda::Permission" and r["Properties"]["Principal"] == "apigateway.amazonaws.com"}
    names = {crate: name for crate, (name, _) in functions().items()}
    for crate in set(api_routes().values()):
        assert names[crate] in permitted, crate


@pytest.mark.parametrize("api_type", ["http", "rest"])
def test_no_circular_dependencies_after_the_sam_transform(api_type):
    """cfn-lint and `sam validate` miss these (a function naming an implicit API did it once). The
    graph holds both branches of every condition; the transform is run with each ApiType anyway."""
    resources = sam_transform({"ApiType": api_type})

    def deps(res):
        text = json.dumps(res.get("Properties", {}))
        names = set(re.findall(r'"Ref": "(\w+)"', text)) | set(re.findall(r'"Fn::GetAtt": \["(\w+)"', text))
        names |= set(re.findall(r"\$\{(\w+)[.}]", text))
        depends = res.get("DependsOn", [])
        names |= {depends} if isinstance(depends, str) else set(depends)
        return {n for n in names if n in resources}

    graph = {name: deps(res) for name, res in resources.items()}
    done, active = set(), []

    def visit(node):
        assert node not in active, "circular dependency: " + " -> ".join(active + [node])
        if node in done:
            return
        active.append(node)
        for dep in graph[node]:
            visit(dep)
        active.pop()
        done.add(node)

    for node in graph:
        visit(node)


def test_streams_use_a_response_streaming_function_url():
    """With ApiType http; with rest the REST API streams (tests/infra/test_rest_api.py)."""
    urls = [r for r in RESOURCES.values() if r["Type"] == "AWS::Lambda::Url"]
    assert len(urls) == 1
    assert urls[0]["Condition"] == "UseHttpApi"
    for name in ("HttpStreamUrlPermission", "HttpStreamUrlInvokePermission"):
        assert RESOURCES[name]["Condition"] == "UseHttpApi", name
    url = urls[0]["Properties"]
    assert url["InvokeMode"] == "RESPONSE_STREAM"
    stream_fn, _ = functions()["http-stream"]
    assert url["TargetFunctionArn"] == {"Fn::GetAtt": [stream_fn, "Arn"]}
    assert {"ApiUrl", "StreamUrl"} <= set(TEMPLATE["Outputs"])


def test_queues_have_dead_letter_queues_and_consumers():
    queues = {n: r for n, r in RESOURCES.items() if r["Type"] == "AWS::SQS::Queue"}
    dlqs = {r["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
            for r in queues.values() if "RedrivePolicy" in r["Properties"]}
    sources = set(queues) - dlqs
    assert sources == {"WorkQueue", "PushQueue"}
    for name in sources:
        props = queues[name]["Properties"]
        dlq = props["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        assert queues[dlq]["Properties"]["FifoQueue"] == props["FifoQueue"] is True, name
        consumers = [
            (fname, ev) for fname, (_, res) in ((c, f) for c, f in functions().items())
            for ev in res["Properties"].get("Events", {}).values()
            if ev["Type"] == "SQS" and ev["Properties"]["Queue"] == {"Fn::GetAtt": [name, "Arn"]}
        ]
        assert len(consumers) == 1, name
        crate, ev = consumers[0]
        assert ev["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        _, res = functions()[crate]
        timeout = res["Properties"].get("Timeout", GLOBALS["Timeout"])
        assert props["VisibilityTimeout"] > timeout, f"{name}: visibility must outlast {crate}'s timeout"


def test_table_has_indexes_ttl_and_point_in_time_recovery():
    table = RESOURCES["TaskTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert {i["IndexName"] for i in table["GlobalSecondaryIndexes"]} == {"GSI1", "GSI2"}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "exp", "Enabled": True}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


def policy_documents(res):
    """The policy documents a function's Policies name: inline ones, and managed policies of this
    template referenced directly or through a condition."""
    for policy in res["Properties"].get("Policies", []):
        if "Statement" in policy:
            yield policy
            continue
        refs = policy["Fn::If"][1:] if "Fn::If" in policy else [policy]
        for ref in refs:
            if isinstance(ref, dict) and ref.get("Ref") in RESOURCES:
                managed = RESOURCES[ref["Ref"]]
                assert managed["Type"] == "AWS::IAM::ManagedPolicy", ref
                yield managed["Properties"]["PolicyDocument"]


def statements():
    """Every IAM statement of the workspace's functions (both branches of a conditional one)."""
    for crate, (_, res) in functions().items():
        for policy in policy_documents(res):
            for st in policy["Statement"]:
                branches = st["Fn::If"][1:] if "Fn::If" in st else [st]
                for branch in branches:
                    if isinstance(branch, dict) and "Action" in branch:
                        yield crate, branch


@pytest.mark.parametrize("field", ["Action", "Resource"])
def test_no_wildcard_iam(field):
    for crate, st in statements():
        values = st[field] if isinstance(st[field], list) else [st[field]]
        for v in values:
            if isinstance(v, str):
                assert "*" not in v, f"{crate}: {field} {v}"
            elif isinstance(v, dict) and "Fn::If" in v:
                assert all("*" not in json.dumps(b) for b in v["Fn::If"][1:]), f"{crate}: {field} {v}"


def test_each_function_touches_only_what_it_uses():
    granted = {}
    for crate, st in statements():
        granted.setdefault(crate, set()).update(st["Action"])
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:TransactWriteItems"}
    readers = {"http-get-task", "http-list-tasks", "http-get-push-config", "http-list-push-configs", "sqs-push-delivery"}
    for crate in readers:
        assert "dynamodb:GetItem" in granted[crate] and not granted[crate] & writes, crate
        assert "sqs:SendMessage" not in granted[crate], crate
    for crate in ("http-agent-card", "http-extended-card"):
        assert granted.get(crate, set()) <= KMS_SIGNING, f"{crate} needs no AWS access but signing keys in KMS"
    assert "sqs:SendMessage" in granted["http-send-message"] and "sqs:SendMessage" in granted["sqs-task-runner"]


KMS_SIGNING = {"kms:Sign", "kms:GetPublicKey"}
# The functions that sign: the card, the extended card (GET and JSON-RPC), the notifications.
SIGNERS = {"http-agent-card", "http-extended-card", "http-jsonrpc", "sqs-push-delivery"}
# ... and http-stream with ApiType rest, where it answers JSON-RPC (POST /) too.
CONDITIONAL_SIGNERS = {"http-stream": ("UseRestApi", "StreamFunctionSigns")}


def test_only_the_signing_functions_use_the_kms_keys():
    """CardSigningKmsKeyArns: kms:Sign and kms:GetPublicKey on exactly those keys, granted (when
    set) to the functions that sign, which read CARD_SIGNING_KMS_KEY_IDS; no other function may."""
    policy = RESOURCES["CardSigningKmsPolicy"]
    assert policy["Condition"] == "HasKmsSigningKeys"
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert set(statement["Action"]) == KMS_SIGNING
    assert statement["Resource"] == {"Fn::Split": [",", {"Ref": "CardSigningKmsKeyArns"}]}
    for crate, (_, res) in functions().items():
        kms = {a for st in (st for c, st in statements() if c == crate) for a in st["Action"] if a.startswith("kms:")}
        env = res["Properties"].get("Environment", {}).get("Variables", {})
        if crate in SIGNERS:
            assert kms == KMS_SIGNING, crate
            assert env["CARD_SIGNING_KMS_KEY_IDS"] == {"Ref": "CardSigningKmsKeyArns"}, crate
        elif crate in CONDITIONAL_SIGNERS:
            when, signs = CONDITIONAL_SIGNERS[crate]
            assert kms == KMS_SIGNING, crate
            assert env["CARD_SIGNING_KMS_KEY_IDS"] == {
                "Fn::If": [when, {"Ref": "CardSigningKmsKeyArns"}, {"Ref": "AWS::NoValue"}]}, crate
            assert {"Fn::If": [signs, {"Ref": "CardSigningKmsPolicy"}, {"Ref": "AWS::NoValue"}]} in res["Properties"]["Policies"]
            assert TEMPLATE["Conditions"][signs] == {"Fn::And": [{"Condition": when}, {"Condition": "HasKmsSigningKeys"}]}
        else:
            assert not kms and "CARD_SIGNING_KMS_KEY_IDS" not in env, crate


def test_example_agents_are_callable_only_by_the_task_runner():
    """AgentRuntime deploys an example agent behind an AWS_IAM Function URL; the task runner calls it
    with SigV4 and is the only principal granted lambda:InvokeFunctionUrl on it."""
    runtime = TEMPLATE["Parameters"]["AgentRuntime"]
    assert runtime["Default"] == "none" and set(runtime["AllowedValues"]) == {"none", "python", "typescript"}
    agents = {"PythonAgentFunction": "python", "TypeScriptAgentFunction": "typescript"}
    for name, language in agents.items():
        props = RESOURCES[name]["Properties"]
        assert props["FunctionUrlConfig"]["AuthType"] == "AWS_IAM", name
        assert props["CodeUri"] == f"../examples/agents/{language}"
        assert (ROOT / "examples/agents" / language / props["Handler"].split(".")[0]).with_suffix(
            ".py" if language == "python" else ".ts").exists()
        blanked = props["Environment"]["Variables"]
        assert all(blanked[k] == "" for k in ("PAGE_TOKEN_SECRET", "A2A_API_KEYS", "EDGE_PUBLISH_SECRET")), name
    assert RESOURCES["TypeScriptAgentFunction"]["Properties"]["FunctionUrlConfig"]["InvokeMode"] == "RESPONSE_STREAM"
    _, runner = functions()["sqs-task-runner"]
    env = runner["Properties"]["Environment"]["Variables"]
    assert env["A2A_AGENT"] == {
        "Fn::If": ["RunsHttpAgent", "http", {"Fn::If": ["RunsGateway", "gateway", {"Ref": "AgentKind"}]}]
    }
    # The gateway (AgentA2aUrl) when no agent over HTTP is configured.
    assert env["AGENT_A2A_URL"] == {"Fn::If": ["RunsGateway", {"Ref": "AgentA2aUrl"}, ""]}
    assert TEMPLATE["Parameters"]["AgentA2aToken"]["NoEcho"] is True
    assert env["AGENT_AUTH"] == {"Fn::If": ["DeployExampleAgent", "sigv4", ""]}
    assert "PythonAgentFunctionUrl" in json.dumps(env["AGENT_URL"]) and "TypeScriptAgentFunctionUrl" in json.dumps(env["AGENT_URL"])
    invokers = [crate for crate, st in statements() if "lambda:InvokeFunctionUrl" in st["Action"]]
    assert invokers == ["sqs-task-runner"], invokers
    grant = next(st for crate, st in statements() if "lambda:InvokeFunctionUrl" in st["Action"])
    assert grant["Condition"] == {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}}
    # No resource-based permission opens the agents to anyone else.
    assert not [r for r in RESOURCES.values() if r["Type"] == "AWS::Lambda::Permission"
                and r["Properties"]["FunctionName"] in ({"Ref": n} for n in agents)]


def test_jwt_mode_puts_the_authorizer_on_every_protocol_route_and_keeps_the_card_public():
    auth = RESOURCES["JwtAuthorizer"]
    assert auth["Condition"] == "UseJwtAuthorizer"
    # The JWT authorizer is the HTTP API's; with ApiType rest, jwt is verified in the functions, so
    # they get the issuer (UseBearer) either way and OIDC_VERIFIED_BY_GATEWAY only with the HTTP API.
    conditions = TEMPLATE["Conditions"]
    assert conditions["UseJwtAuthorizer"] == {
        "Fn::And": [{"Condition": "UseHttpApi"}, {"Fn::Equals": [{"Ref": "AuthMode"}, "jwt"]}]}
    assert conditions["UseBearer"] == {
        "Fn::Or": [{"Fn::Equals": [{"Ref": "AuthMode"}, "jwt"]}, {"Fn::Equals": [{"Ref": "AuthMode"}, "oidc"]}]}
    assert auth["Properties"]["AuthorizerType"] == "JWT"
    assert auth["Properties"]["IdentitySource"] == ["$request.header.Authorization"]
    assert auth["Properties"]["JwtConfiguration"]["Issuer"] == {"Ref": "OidcIssuer"}
    assert set(TEMPLATE["Parameters"]["AuthMode"]["AllowedValues"]) == {"api-key", "jwt", "oidc", "none"}
    for res in RESOURCES.values():
        if res["Type"] != "AWS::ApiGatewayV2::Route":
            continue
        props = res["Properties"]
        if "well-known" in props["RouteKey"]:
            assert "AuthorizerId" not in props and "AuthorizationType" not in props, props["RouteKey"]
        else:
            assert props["AuthorizationType"] == {"Fn::If": ["UseJwtAuthorizer", "JWT", "NONE"]}, props["RouteKey"]
            assert props["AuthorizerId"]["Fn::If"][1] == {"Ref": "JwtAuthorizer"}, props["RouteKey"]
    env = GLOBALS["Environment"]["Variables"]
    assert env["OIDC_VERIFIED_BY_GATEWAY"] == {"Fn::If": ["UseJwtAuthorizer", "true", "false"]}
    assert env["OIDC_ISSUER"] == {"Fn::If": ["UseBearer", {"Ref": "OidcIssuer"}, ""]}
    # The streaming Function URL has no authorizer in front: it verifies tokens itself.
    stream = RESOURCES["HttpStreamFunction"]["Properties"]["Environment"]["Variables"]
    assert stream["OIDC_VERIFIED_BY_GATEWAY"] == "false"


# ---------------------------------------------------------------- observability
# The EMF metrics the functions emit (a2a-telemetry): each metric's dimension sets, Service first.
EMF_METRICS = {
    "OperationDuration": {("Service", "Operation"), ("Service", "Operation", "Outcome"), ("Service", "Outcome")},
    "OperationErrors": {("Service", "Operation"), ("Service",)},
    "TasksFinished": {("Service", "State")},
    "TurnDuration": {("Service", "State")},
    "QueueLag": {("Service", "Queue")},
    "PushDeliveries": {("Service", "Outcome"), ("Service", "Outcome", "Attempt")},
    "StoreDuration": {("Service", "Operation")},
}
OPERATIONS = set(OPERATION_FUNCTION) | STREAMING
FINAL_STATES = {f"TASK_STATE_{s}" for s in ("COMPLETED", "FAILED", "CANCELED", "REJECTED", "INPUT_REQUIRED", "AUTH_REQUIRED")}
STORE_OPERATIONS = {"create", "claimed_task", "load", "update", "events_after", "event", "list", "hydrate",
                    "put_config", "get_config", "list_configs", "delete_config"}
TELEMETRY_ENV = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": {"Ref": "OtlpEndpoint"},
    "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
    "OTEL_TRACES_SAMPLER_ARG": {"Ref": "TraceSampleRatio"},
    "A2A_METRICS": {"Ref": "Metrics"},
    "A2A_METRICS_NAMESPACE": {"Ref": "MetricsNamespace"},
    "A2A_METRICS_SERVICE": {"Ref": "AWS::StackName"},
}
ALARM_ACTIONS = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
COLLECTOR_LAYER = {"Fn::If": ["HasCollectorLayer", [{"Ref": "CollectorLayerArn"}], {"Ref": "AWS::NoValue"}]}


def test_observability_parameters_sit_together_before_the_alarm_topic():
    params = TEMPLATE["Parameters"]
    names = list(params)
    new = ["OtlpEndpoint", "TraceSampleRatio", "CollectorLayerArn", "XRayTracing", "Metrics", "MetricsNamespace",
           "QueueAgeAlarmSeconds", "ErrorAlarmThreshold"]
    at = names.index("OtlpEndpoint")
    assert names[at:at + len(new) + 1] == new + ["AlarmTopicArn"]
    assert params["OtlpEndpoint"]["Default"] == "" and params["CollectorLayerArn"]["Default"] == ""
    assert params["XRayTracing"]["Default"] == "PassThrough"
    assert set(params["XRayTracing"]["AllowedValues"]) == {"Active", "PassThrough"}
    assert params["Metrics"]["Default"] == "emf" and params["Metrics"]["AllowedValues"] == ["emf", "off"]
    assert params["MetricsNamespace"]["Default"] == "A2A"
    assert params["QueueAgeAlarmSeconds"]["Type"] == params["ErrorAlarmThreshold"]["Type"] == "Number"
    assert (params["QueueAgeAlarmSeconds"]["Default"], params["ErrorAlarmThreshold"]["Default"]) == (300, 5)
    ratio = params["TraceSampleRatio"]
    assert ratio["Type"] == "String" and ratio["Default"] == "1"
    # CloudFormation matches AllowedPattern against the whole value.
    for ok in ("0", "1", "0.1", "0.05", "1.0", "0.999"):
        assert re.fullmatch(ratio["AllowedPattern"], ok), ok
    for bad in ("", "2", "1.5", "-0.1", "10", ".5", "0.", "abc", "0.1 "):
        assert not re.fullmatch(ratio["AllowedPattern"], bad), bad
    assert TEMPLATE["Conditions"]["HasCollectorLayer"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "CollectorLayerArn"}, ""]}]}


def test_every_function_gets_the_telemetry_settings():
    """Globals: the OTEL_* and A2A_METRICS* variables, Lambda's X-Ray mode and the optional collector
    layer; no function overrides them, so after the transform every Lambda function has them."""
    env = GLOBALS["Environment"]["Variables"]
    for name, value in TELEMETRY_ENV.items():
        assert env[name] == value, name
    assert GLOBALS["Tracing"] == {"Ref": "XRayTracing"}
    assert GLOBALS["Layers"] == COLLECTOR_LAYER
    serverless = {n: r for n, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function"}
    assert {"PythonAgentFunction", "TypeScriptAgentFunction"} < set(serverless)
    for name, res in serverless.items():
        props = res["Properties"]
        assert not {"Tracing", "Layers"} & set(props), name
        assert not set(TELEMETRY_ENV) & set(props.get("Environment", {}).get("Variables", {})), name
    deployed = {n: r for n, r in sam_transform().items() if r["Type"] == "AWS::Lambda::Function"}
    assert set(deployed) == set(serverless)
    for name, res in deployed.items():
        props = res["Properties"]
        assert props["TracingConfig"] == {"Mode": {"Ref": "XRayTracing"}}, name
        assert props["Layers"] == COLLECTOR_LAYER, name
        variables = props["Environment"]["Variables"]
        assert {k: variables.get(k) for k in TELEMETRY_ENV} == TELEMETRY_ENV, name


@pytest.mark.parametrize("mode", ["Active", "PassThrough"])
def test_every_role_may_write_to_xray(mode):
    """With Tracing set (and not Disabled, which XRayTracing does not allow) SAM attaches
    AWSXrayWriteOnlyAccess (xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules,
    GetSamplingTargets) to every function's role: Lambda's own tracing in Active mode, and a collector
    from CollectorLayerArn exporting to X-Ray in either mode, need nothing more."""
    resources = sam_transform({"XRayTracing": mode})
    functions_ = [r for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions_) == len([r for r in RESOURCES.values() if r["Type"] == "AWS::Serverless::Function"])
    for fn in functions_:
        role = resources[fn["Properties"]["Role"]["Fn::GetAtt"][0]]
        assert "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess" in role["Properties"]["ManagedPolicyArns"], fn


def dashboard():
    """The dashboard body with its !Sub variables replaced: parameters by their defaults, anything else
    (pseudo parameters, resources and their attributes) by `<name>`; each must exist."""
    res = RESOURCES["Dashboard"]
    assert res["Type"] == "AWS::CloudWatch::Dashboard"
    assert res["Properties"]["DashboardName"] == {"Fn::Sub": "${AWS::StackName}-a2a"}
    body = res["Properties"]["DashboardBody"]["Fn::Sub"]
    assert isinstance(body, str)
    params = TEMPLATE["Parameters"]

    def value(m):
        name = m.group(1)
        if name in params:
            return str(params[name]["Default"])
        assert name.startswith("AWS::") or name.split(".")[0] in RESOURCES, name
        return f"<{name}>"

    return body, json.loads(re.sub(r"\$\{([\w:.]+)\}", value, body))


def dashboard_metrics(widgets):
    """(title, namespace, metric, ((dimension, value), ...), stat) of every metric of every widget."""
    for w in widgets:
        if w["type"] != "metric":
            continue
        props = w["properties"]
        for row in props["metrics"]:
            options = row[-1] if isinstance(row[-1], dict) else {}
            parts = row[:-1] if options else row
            assert len(parts) % 2 == 0 and "..." not in parts, row  # every dimension spelled out
            dims = tuple(zip(parts[2::2], parts[3::2]))
            yield props["title"], parts[0], parts[1], dims, options.get("stat", props["stat"])


def test_the_dashboard_shows_every_metric_with_dimensions_the_functions_emit():
    raw, body = dashboard()
    assert '"A2A"' not in raw, "the EMF namespace is MetricsNamespace's"
    widgets = body["widgets"]
    # The widgets tile the 24-column grid without overlapping.
    cells = set()
    for w in widgets:
        assert 0 <= w["x"] and w["x"] + w["width"] <= 24, w
        area = {(x, y) for x in range(w["x"], w["x"] + w["width"]) for y in range(w["y"], w["y"] + w["height"])}
        assert not cells & area, w
        cells |= area
    for w in widgets:
        if w["type"] == "metric":
            assert w["properties"]["region"] == "<AWS::Region>" and w["properties"]["period"] in (60, 300), w
    metrics = list(dashboard_metrics(widgets))
    emf = [m for m in metrics if m[1] == "A2A"]
    assert {m[2] for m in emf} == set(EMF_METRICS)
    values = {}
    for title, _, metric, dims, stat in emf:
        names = tuple(d for d, _ in dims)
        assert names in EMF_METRICS[metric], f"{title}: {metric} has no dimension set {names}"
        assert dims[0] == ("Service", "<AWS::StackName>"), title
        for d, v in dims[1:]:
            values.setdefault((metric, d), set()).add(v)
        values.setdefault((metric, "stat"), set()).add(stat)
    assert values["OperationDuration", "Operation"] == OPERATIONS
    assert values["OperationDuration", "Outcome"] == {"ok", "client_error", "server_error"}
    assert {"SampleCount", "p50", "p99"} <= values["OperationDuration", "stat"]
    assert values["OperationErrors", "Operation"] == OPERATIONS and values["OperationErrors", "stat"] == {"Sum"}
    assert any(m[2] == "OperationErrors" and len(m[3]) == 1 for m in emf), "the total the alarm watches"
    assert values["TasksFinished", "State"] == FINAL_STATES and values["TasksFinished", "stat"] == {"Sum"}
    assert values["TurnDuration", "State"] >= {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}
    assert values["TurnDuration", "State"] <= FINAL_STATES and values["TurnDuration", "stat"] == {"p50", "p99"}
    assert values["QueueLag", "Queue"] == {"tasks", "push"} and values["QueueLag", "stat"] == {"p99"}
    assert values["PushDeliveries", "Outcome"] == {"delivered", "failed", "refused"}
    assert values["StoreDuration", "Operation"] == STORE_OPERATIONS and values["StoreDuration", "stat"] == {"p99"}
    # The queues, the dead-letter queues and the busiest functions, by their deployed names.
    shown = {(ns, metric, dims) for _, ns, metric, dims, _ in metrics}
    for queue in ("WorkQueue", "PushQueue"):
        for metric in ("ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesVisible"):
            assert ("AWS/SQS", metric, (("QueueName", f"<{queue}.QueueName>"),)) in shown, (queue, metric)
    for dlq in ("WorkDeadLetterQueue", "PushDeadLetterQueue"):
        assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", (("QueueName", f"<{dlq}.QueueName>"),)) in shown
    for fn in ("HttpSendMessageFunction", "HttpJsonRpcFunction", "HttpStreamFunction", "SqsTaskRunnerFunction"):
        for metric in ("Errors", "Throttles", "Duration"):
            assert ("AWS/Lambda", metric, (("FunctionName", f"<{fn}>"),)) in shown, (fn, metric)
    assert {m[4] for m in metrics if m[2] == "Duration"} == {"p99"}
    # The alarm status widget names alarms of this template.
    (alarms,) = [w["properties"]["alarms"] for w in widgets if w["type"] == "alarm"]
    for arn in alarms:
        name = re.fullmatch(r"<(\w+)\.Arn>", arn).group(1)
        assert RESOURCES[name]["Type"] == "AWS::CloudWatch::Alarm", arn
    url = TEMPLATE["Outputs"]["DashboardUrl"]["Value"]["Fn::Sub"]
    assert url == ("https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home?region=${AWS::Region}"
                   "#dashboards:name=${AWS::StackName}-a2a")


def test_observability_alarms():
    """Server errors and failed turns on the functions' EMF metrics (the namespace and Service they
    emit under), and the age of the oldest message of each queue; every alarm notifies AlarmTopicArn."""
    env = GLOBALS["Environment"]["Variables"]
    expected = {
        "ServerErrorsAlarm": (env["A2A_METRICS_NAMESPACE"], "OperationErrors",
                              [{"Name": "Service", "Value": env["A2A_METRICS_SERVICE"]}],
                              "Sum", {"Ref": "ErrorAlarmThreshold"}),
        "FailedTurnsAlarm": (env["A2A_METRICS_NAMESPACE"], "TasksFinished",
                             [{"Name": "Service", "Value": env["A2A_METRICS_SERVICE"]},
                              {"Name": "State", "Value": "TASK_STATE_FAILED"}],
                             "Sum", 1),
        "WorkQueueAgeAlarm": ("AWS/SQS", "ApproximateAgeOfOldestMessage",
                              [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["WorkQueue", "QueueName"]}}],
                              "Maximum", {"Ref": "QueueAgeAlarmSeconds"}),
        "PushQueueAgeAlarm": ("AWS/SQS", "ApproximateAgeOfOldestMessage",
                              [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["PushQueue", "QueueName"]}}],
                              "Maximum", {"Ref": "QueueAgeAlarmSeconds"}),
    }
    for name, (namespace, metric, dims, stat, threshold) in expected.items():
        res = RESOURCES[name]
        assert res["Type"] == "AWS::CloudWatch::Alarm" and "Condition" not in res, name
        p = res["Properties"]
        assert (p["Namespace"], p["MetricName"], p["Dimensions"]) == (namespace, metric, dims), name
        assert (p["Statistic"], p["Period"], p["EvaluationPeriods"]) == (stat, 300, 1), name
        assert p["Threshold"] == threshold and p["ComparisonOperator"] == "GreaterThanOrEqualToThreshold", name
        assert p["TreatMissingData"] == "notBreaching", name
        if namespace != "AWS/SQS":
            assert tuple(d["Name"] for d in dims) in EMF_METRICS[metric], name
    for name, res in RESOURCES.items():
        if res["Type"] == "AWS::CloudWatch::Alarm":
            assert res["Properties"]["AlarmActions"] == ALARM_ACTIONS, name
