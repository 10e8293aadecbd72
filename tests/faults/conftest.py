"""Fixtures of the fault tests: the fault proxy in front of moto, an a2a-local on the AWS store behind
it (a table and queues of its own), the crash tests' agent, a webhook receiver."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "crash"))
sys.path.insert(0, str(HERE))
from proxy import FaultProxy  # noqa: E402
from support import free_port, required, wait_ready  # noqa: E402

# A received job stays invisible this long; heartbeats renew it every third of it. Short, so that a
# job whose runner was killed comes back within seconds.
VISIBILITY_SECONDS = "3"


def moto_url():
    return required("AWS_ENDPOINT_URL")


@pytest.fixture
def proxy():
    p = FaultProxy(moto_url(), seed=int(os.environ.get("FAULT_SEED", "30")))
    yield p
    p.close()


class Aws:
    """The test's view of the AWS side (straight to moto, never through the proxy)."""

    def __init__(self, table):
        self.table = table
        kwargs = {"endpoint_url": moto_url(), "region_name": os.environ.get("AWS_REGION", "us-east-1")}
        self.dynamodb = boto3.client("dynamodb", **kwargs)
        self.sqs = boto3.client("sqs", **kwargs)

    def last_seq(self, task_ids):
        """Each task's last event number as the table holds it."""
        out = {}
        for task_id in task_ids:
            item = self.dynamodb.get_item(TableName=self.table, Key={"PK": {"S": f"T#{task_id}"}, "SK": {"S": "A"}})
            out[task_id] = int(item["Item"]["seq"]["N"])
        return out

    def events(self, task_id):
        """The sequence numbers of the task's event items, in order (each event once, no gap)."""
        seqs, start = [], None
        while True:  # bounded by the task's items
            kwargs = {"TableName": self.table, "KeyConditionExpression": "PK = :pk AND begins_with(SK, :e)",
                      "ExpressionAttributeValues": {":pk": {"S": f"T#{task_id}"}, ":e": {"S": "E#"}}}
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = self.dynamodb.query(**kwargs)
            seqs += [int(i["SK"]["S"][2:]) for i in page["Items"]]
            start = page.get("LastEvaluatedKey")
            if not start:
                return sorted(seqs)

    def whole_logs(self, task_ids):
        """Asserts each task's event items are 1..n (each event once, no gap); returns the n's."""
        last_seq = self.last_seq(task_ids)
        for task_id, last in last_seq.items():
            assert self.events(task_id) == list(range(1, last + 1)), f"{task_id}: an event twice or a gap"
        return last_seq

    def queue_url(self, name):
        return self.sqs.get_queue_url(QueueName=f"{self.table}-{name}.fifo")["QueueUrl"]

    def visible(self, name):
        """Messages waiting in queue `name` (e.g. `work-dlq`): the metric the DLQ alarm watches."""
        attrs = self.sqs.get_queue_attributes(QueueUrl=self.queue_url(name),
                                              AttributeNames=["ApproximateNumberOfMessages"])
        return int(attrs["Attributes"]["ApproximateNumberOfMessages"])


@pytest.fixture
def aws_host(proxy, tmp_path):
    """Starts a2a-local on the AWS store behind the proxy: `start(*args) -> (base, process)`; all
    processes one fixture starts share one table and its queues (`.aws`)."""
    binary = required("A2A_LOCAL_BIN")
    table = f"faults-{uuid.uuid4().hex[:10]}"
    logs = Path(os.environ.get("A2A_TEST_LOGS", tmp_path))
    log = open(logs / "faults-a2a-local.log", "a")
    procs = []

    def start(*args, env=None):
        port = free_port()
        environ = os.environ | {"AWS_ENDPOINT_URL": proxy.url, "TABLE_NAME": table, "SQS_WAIT_SECONDS": "1",
                                "SQS_VISIBILITY_SECONDS": VISIBILITY_SECONDS} | (env or {})
        proc = subprocess.Popen([binary, "--addr", f"127.0.0.1:{port}", "--store", "aws", "--create-resources",
                                 "--webhook-allow", "127.0.0.1/32", "--push-timeout", "2", *args],
                                stdout=log, stderr=subprocess.STDOUT, env=environ)
        procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/.well-known/agent-card.json", [proc], "a2a-local --store aws", 60)
        return base, proc

    start.aws = Aws(table)
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    log.close()
