"""The Lambda Managed Instances variant of the stack (infra/managed_instances.py, ADR 0019): derived
from infra/template.yaml, it passes the real SAM transform with a capacity provider ARN given, and
every Rust function comes out with the capacity provider, its concurrency, a scaling configuration,
2 GB and `PublishToLatestPublished`, the example agents without; the capacity provider ARN is a
required parameter with Lambda's pattern; the script writes elsewhere than the template and gives
the same bytes each time; its CodeUris reach the same code from the output's directory. Also the
companion template infra/capacity-provider.yaml.

What cannot be checked here (no AWS account): that Lambda accepts these functions on a capacity
provider, scales them, and serves the Function URL and response streaming from them."""

import copy
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
from cfnlint.decode import decode

from test_template import ROOT, TEMPLATE, functions, sam_transform

INFRA = ROOT / "infra"
SCRIPT = INFRA / "managed_instances.py"
ARN = "arn:aws:lambda:us-east-1:123456789012:capacity-provider:a2a-prod"

spec = importlib.util.spec_from_file_location("managed_instances", SCRIPT)
mi = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mi)


def derived(**kwargs):
    return mi.derive(TEMPLATE, **kwargs)


def lambda_schema(resource_type):
    """CloudFormation's resource schema as cfn-lint carries it (us-east-1)."""
    import cfnlint

    schemas = os.path.join(os.path.dirname(cfnlint.__file__), "data", "schemas")
    with open(os.path.join(schemas, "providers", "us-east-1.json"), encoding="utf-8") as f:
        ref = json.load(f)[resource_type]
    with open(os.path.join(schemas, "resources", ref + ".json"), encoding="utf-8") as f:
        return json.load(f)


def run_script(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("api_type", ["http", "rest"])
def test_every_rust_function_runs_on_the_capacity_provider_after_the_sam_transform(api_type):
    resources = sam_transform({"CapacityProviderArn": ARN, "ApiType": api_type}, derived())
    rust, others = {}, {}
    for name, res in resources.items():
        if res["Type"] == "AWS::Lambda::Function":
            (rust if res["Properties"]["Runtime"] == "provided.al2023" else others)[name] = res["Properties"]
    assert set(rust) == {name for name, _ in functions().values()}, "every Rust function, and only those"
    for name, props in rust.items():
        assert props["CapacityProviderConfig"] == {"LambdaManagedInstancesCapacityProviderConfig": {
            "CapacityProviderArn": {"Ref": "CapacityProviderArn"},
            "PerExecutionEnvironmentMaxConcurrency": {"Ref": "PerEnvironmentConcurrency"},
        }}, name
        assert props["MemorySize"] >= 2048, name
        assert props["FunctionScalingConfig"] == {"MinExecutionEnvironments": {"Ref": "MinExecutionEnvironments"},
                                                  "MaxExecutionEnvironments": {"Ref": "MaxExecutionEnvironments"}}, name
        assert props["PublishToLatestPublished"] is True, name
        assert not {"VpcConfig", "ProvisionedConcurrencyConfig", "SnapStart"} & set(props), name
    # The example agents (python3.13, nodejs22.x) stay on Lambda on demand with the Globals' memory.
    assert set(others) == {"PythonAgentFunction", "TypeScriptAgentFunction"}
    for name, props in others.items():
        assert not {"CapacityProviderConfig", "FunctionScalingConfig", "PublishToLatestPublished"} & set(props), name
        assert props["MemorySize"] == TEMPLATE["Globals"]["Function"]["MemorySize"], name
    # The event source mappings and the API integrations keep the unqualified function ARNs, which
    # invoke $LATEST.PUBLISHED on Managed Instances.
    mappings = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert {m["FunctionName"]["Ref"] for m in mappings} == {"SqsTaskRunnerFunction", "SqsPushDeliveryFunction"}
    assert not [r for r in resources.values() if r["Type"] in ("AWS::Lambda::Version", "AWS::Lambda::Alias")]


def test_the_capacity_provider_arn_is_a_required_parameter_with_lambdas_pattern():
    params = derived()["Parameters"]
    # CloudFormation refuses to create or update a stack without a value for a parameter that has
    # no default ("Parameters: [CapacityProviderArn] must have values").
    arn = params["CapacityProviderArn"]
    assert "Default" not in arn and arn["Type"] == "String"
    schema = lambda_schema("AWS::Lambda::Function")
    assert arn["AllowedPattern"] == (schema["definitions"]["LambdaManagedInstancesCapacityProviderConfig"]
                                     ["properties"]["CapacityProviderArn"]["pattern"])
    for good in (ARN, "arn:aws-us-gov:lambda:us-gov-west-1:123456789012:capacity-provider:p_1"):
        assert re.fullmatch(arn["AllowedPattern"], good), good
    for bad in ("", "a2a-prod", "arn:aws:lambda:us-east-1:123456789012:function:a2a",
                "arn:aws:lambda:us-east-1:1234:capacity-provider:a2a", ARN + "/x"):
        assert not re.fullmatch(arn["AllowedPattern"], bad), bad
    # The numbers stay within what Lambda takes.
    cfg = schema["definitions"]["LambdaManagedInstancesCapacityProviderConfig"]["properties"]
    scaling = schema["definitions"]["FunctionScalingConfig"]["properties"]
    for name, limits in (("PerEnvironmentConcurrency", cfg["PerExecutionEnvironmentMaxConcurrency"]),
                         ("MinExecutionEnvironments", scaling["MinExecutionEnvironments"]),
                         ("MaxExecutionEnvironments", scaling["MaxExecutionEnvironments"])):
        p = params[name]
        assert p["Type"] == "Number" and limits["minimum"] <= p["MinValue"] <= p["Default"] <= p["MaxValue"] <= limits["maximum"], name
    assert params["MinExecutionEnvironments"]["Default"] <= params["MaxExecutionEnvironments"]["Default"]
    # The template's own parameters first, unchanged; the new ones after them.
    assert list(params)[:len(TEMPLATE["Parameters"])] == list(TEMPLATE["Parameters"])
    assert list(params)[len(TEMPLATE["Parameters"]):] == list(mi.PARAMETERS)


def test_the_script_writes_elsewhere_and_deterministically(tmp_path):
    source = INFRA / "template.yaml"
    before = sha(source)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for out in (first, second):
        done = run_script("--out", out)
        assert done.returncode == 0, done.stderr
    assert sha(source) == before, "the script changed infra/template.yaml"
    assert first.read_bytes() == second.read_bytes()
    assert json.loads(first.read_text(encoding="utf-8")) == mi.derive(TEMPLATE, out_dir=tmp_path)
    refused = run_script("--out", source)
    assert refused.returncode != 0 and "elsewhere" in refused.stderr
    assert sha(source) == before
    assert mi.OUT.parent.name == "build" and "/build/" in (INFRA / ".gitignore").read_text().splitlines()


def test_code_uris_reach_the_same_code_from_the_output(tmp_path):
    out_dir = tmp_path / "deep" / "er"
    template = mi.derive(TEMPLATE, out_dir=out_dir)
    for name, res in template["Resources"].items():
        if res["Type"] == "AWS::Serverless::Function":
            original = TEMPLATE["Resources"][name]["Properties"]["CodeUri"]
            assert os.path.realpath(out_dir / res["Properties"]["CodeUri"]) == os.path.realpath(INFRA / original), name
    # The default output, infra/build/: one directory deeper than the template.
    default = derived()["Resources"]["HttpGetTaskFunction"]["Properties"]["CodeUri"]
    assert default == "../.."


def test_on_demand_leaves_the_named_functions_alone():
    template = derived(on_demand=("http-stream",))
    stream = template["Resources"]["HttpStreamFunction"]["Properties"]
    assert not {"CapacityProviderConfig", "FunctionScalingConfig", "PublishToLatestPublished", "MemorySize"} & set(stream)
    assert "CapacityProviderConfig" in template["Resources"]["HttpGetTaskFunction"]["Properties"]
    with pytest.raises(SystemExit, match="not Rust functions"):
        derived(on_demand=("no-such-function",))


def test_only_puts_the_named_functions_on_the_instances():
    busy = ("http-send-message", "http-get-task", "sqs-task-runner", "http-stream")
    template = derived(only=busy)
    on = {crate for crate, (name, _) in functions().items()
          if "CapacityProviderConfig" in template["Resources"][name]["Properties"]}
    assert on == set(busy)
    assert template == derived(on_demand=tuple(c for c in functions() if c not in busy))
    with pytest.raises(SystemExit, match="exclude each other"):
        derived(only=busy, on_demand=("http-jsonrpc",))
    with pytest.raises(SystemExit, match="not Rust functions"):
        derived(only=("no-such-function",))


def test_properties_that_exclude_a_capacity_provider_are_refused():
    template = copy.deepcopy(TEMPLATE)
    template["Resources"]["HttpGetTaskFunction"]["Properties"]["VpcConfig"] = {"SubnetIds": [], "SecurityGroupIds": []}
    with pytest.raises(SystemExit, match="VpcConfig"):
        mi.derive(template)
    template = copy.deepcopy(TEMPLATE)
    template["Globals"]["Function"]["ProvisionedConcurrencyConfig"] = {"ProvisionedConcurrentExecutions": 1}
    with pytest.raises(SystemExit, match="ProvisionedConcurrencyConfig"):
        mi.derive(template)
    # The input is never modified.
    assert "CapacityProviderArn" not in TEMPLATE["Parameters"]
    assert "CapacityProviderConfig" not in TEMPLATE["Resources"]["HttpGetTaskFunction"]["Properties"]


def test_capacity_provider_template():
    cp, errors = decode(str(INFRA / "capacity-provider.yaml"))
    assert not errors, errors
    arch = cp["Parameters"]["Architecture"]
    base = TEMPLATE["Parameters"]["Architecture"]
    assert arch["AllowedValues"] == base["AllowedValues"] and arch["Default"] == base["Default"]
    role = cp["Resources"]["OperatorRole"]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    assert role["ManagedPolicyArns"] == [{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator"}]
    provider = cp["Resources"]["CapacityProvider"]
    assert provider["Type"] == "AWS::Lambda::CapacityProvider"
    props = provider["Properties"]
    assert props["VpcConfig"] == {"SubnetIds": {"Ref": "SubnetIds"}, "SecurityGroupIds": {"Ref": "SecurityGroupIds"}}
    assert props["PermissionsConfig"] == {"CapacityProviderOperatorRoleArn": {"Fn::GetAtt": ["OperatorRole", "Arn"]}}
    assert props["InstanceRequirements"]["Architectures"] == [{"Ref": "Architecture"}]
    assert cp["Outputs"]["CapacityProviderArn"]["Value"] == {"Fn::GetAtt": ["CapacityProvider", "Arn"]}
    # Room for the default floor: every Rust function x MinExecutionEnvironments x 1 vCPU.
    floor = len(functions()) * mi.PARAMETERS["MinExecutionEnvironments"]["Default"]
    assert cp["Parameters"]["MaxVCpuCount"]["Default"] >= floor


def test_sam_still_refuses_a_condition_around_capacity_provider_config():
    """ADR 0019's reason for a derived template: SAM's model of CapacityProviderConfig takes no Fn::If
    (while `sam validate --lint` passes it). When this fails, a parameter could switch it instead."""
    from samtranslator.model.exceptions import InvalidDocumentException

    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Parameters": {"Arn": {"Type": "String", "Default": ""}},
        "Conditions": {"HasArn": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Arn"}, ""]}]}},
        "Resources": {"Fn": {"Type": "AWS::Serverless::Function", "Properties": {
            "Runtime": "provided.al2023", "Handler": "bootstrap", "CodeUri": "s3://bucket/key",
            "CapacityProviderConfig": {"Fn::If": ["HasArn", {"Arn": {"Ref": "Arn"}}, {"Ref": "AWS::NoValue"}]},
        }}},
    }
    with pytest.raises(InvalidDocumentException, match="CapacityProviderConfig"):
        sam_transform({"Arn": ARN}, template)
