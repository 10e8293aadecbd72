"""docs/configuration.md lists every parameter of the SAM template, in the template's order, with the
template's default, then the parameters the Lambda Managed Instances variant adds
(infra/managed_instances.py) with theirs (the flags of a2a-local and of the `a2a` command line are
checked against their clap definitions by those crates' own tests)."""

import importlib.util
import re
from pathlib import Path

from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]


def documented_parameters():
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = page.split("\n## SAM parameters\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"^\| `([A-Za-z0-9]+)` \| (`[^`]*`|—) \|", line)
        if m:
            rows.append((m.group(1), None if m.group(2) == "—" else m.group(2).strip("`")))
    return rows


def managed_instances_parameters():
    spec = importlib.util.spec_from_file_location("managed_instances", ROOT / "infra" / "managed_instances.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PARAMETERS


def test_every_sam_parameter_is_documented_with_its_default():
    template, errors = decode(str(ROOT / "infra" / "template.yaml"))
    assert not errors, errors
    parameters = list(template["Parameters"].items()) + list(managed_instances_parameters().items())
    defined = [(name, str(p["Default"]) if str(p.get("Default", "")) != "" else None) for name, p in parameters]
    assert documented_parameters() == defined
