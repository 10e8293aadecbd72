"""Faults on the AWS path, measured: a2a-local on the AWS store (DynamoDB and SQS on moto, through the
fault proxy of tests/faults/proxy.py), its task runner killed again and again, DynamoDB and SQS
throttling, failing and resetting connections under load, a webhook receiver that is down for a
while, and poison input. Each test checks the outcome from the clients' side and in the table, and
prints its figures (faults injected, tasks, losses). Loopback only; every loop is bounded."""

import os
import random
import signal
import threading
import time
import uuid

from load import FINAL, TEXT, Load, check, check_runs, check_streams, message, rpc, start_agent
from proxy import Rule
from support import WebhookReceiver, stop, webhook_receiver

ROUNDS = int(os.environ.get("FAULT_KILL_ROUNDS", "4"))
# Codes a client may be answered while faults last: retryable ones (the store or the queue was
# unavailable after the SDK's retries), never an internal error without a reason.
RETRYABLE = {-32011: "ResourceExhausted / unavailable"}


def kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def test_the_task_runner_killed_again_and_again_loses_nothing(aws_host, proxy, tmp_path):
    """SIGKILL at random points of the runs; SQS hands each job out again after its visibility."""
    runs_log = tmp_path / "runs.jsonl"
    agent_url, agent = start_agent(runs_log)
    hook, received = webhook_receiver()
    load = Load(hook)
    rng = random.Random(int(os.environ.get("FAULT_SEED", "30")))
    try:
        for _ in range(ROUNDS):
            base, proc = aws_host("--agent-url", agent_url)
            load.resume_streams(base)
            load.round(base, rng.uniform(3.0, 6.0), kill=lambda: kill(proc))
        base, proc = aws_host("--agent-url", agent_url)
        load.resume_streams(base)
        # Jobs held by a killed runner come back after their visibility (3 s), then settle.
        states = load.settle(base, 60)
        last_seq = aws_host.aws.whole_logs(set(states) | set(load.streams))
        summary = check(load, states, last_seq, runs_log, received)
        print(f"\nfaults: runner killed {ROUNDS} times; {summary}; nothing lost")
    finally:
        stop(agent)


def test_throttling_errors_and_resets_lose_nothing_acknowledged(aws_host, proxy, tmp_path):
    """A share of DynamoDB and SQS calls throttled, failing with 500/503, reset or slowed down, some
    after moto applied them (their answer lost), while sends, streams and cancels run."""
    runs_log = tmp_path / "runs.jsonl"
    agent_url, agent = start_agent(runs_log)
    hook, received = webhook_receiver()
    base, proc = aws_host("--agent-url", agent_url)
    load = Load(hook)
    proxy.set(
        Rule("DynamoDB_", "throttle", 0.08),
        Rule("DynamoDB_", "503", 0.03),
        Rule("DynamoDB_", "reset", 0.02),
        Rule("DynamoDB_20120810.GetItem", "latency", 0.05, delay=0.3),
        Rule("DynamoDB_20120810.TransactWriteItems", "500", 0.03, when="after"),
        Rule("DynamoDB_20120810.PutItem", "500", 0.03, when="after"),
        Rule("AmazonSQS.SendMessage", "reset", 0.03, when="after"),
        Rule("AmazonSQS.", "throttle", 0.05),
        Rule("AmazonSQS.", "500", 0.03),
        Rule("AmazonSQS.ReceiveMessage", "reset", 0.03),
    )
    cancels = {"asked": 0}

    def canceller(stop_at):
        while time.time() < stop_at:  # bounded: the load's time
            with load.lock:
                ids = list(load.answered)[-3:]
            for task_id in ids:
                answer = rpc(base, "CancelTask", {"id": task_id})
                assert "result" in answer or answer["error"]["code"] in (-32002, -32011), answer
                cancels["asked"] += 1
            time.sleep(0.2)

    try:
        stop_at = time.time() + 10
        side = threading.Thread(target=canceller, args=(stop_at,))
        side.start()
        load.round(base, 10)
        side.join(timeout=40)
        calls, injected = proxy.totals()
        proxy.clear()
        states = load.settle(base, 60)
        for task_id, task in states.items():
            assert task["status"]["state"] in FINAL, (task_id, task["status"])
        # Every answered task is whole in the table: its events once each, no gap.
        aws_host.aws.whole_logs(states)
        # Every stream, resumed where it was cut off (if it was), saw each event once, in order.
        load.resume_streams(base)
        check_streams(load, aws_host.aws.whole_logs(load.streams))
        completed = [t for t, s in states.items() if s["status"]["state"] == "TASK_STATE_COMPLETED"]
        for task_id in completed:
            text = "".join(p["text"] for p in states[task_id]["artifacts"][0]["parts"])
            assert text == TEXT, (task_id, text)
        for error in load.errors:
            assert error.get("code") in RETRYABLE or error.get("status") in (429, 503), error
            assert error.get("message", "") or error.get("body"), error
        check_runs(runs_log)
        faults = sum(injected.values())
        assert faults > 20, f"too few faults injected to mean anything: {injected}"
        kinds = {}
        for (op, fault, when), count in injected.items():
            key = f"{op.split('.')[0].split('_')[0]} {fault}" + (" (after moto applied it)" if when == "after" else "")
            kinds[key] = kinds.get(key, 0) + count
        print(f"\nfaults: {faults} injected over {sum(calls.values())} AWS calls "
              f"({', '.join(f'{k}: {v}' for k, v in sorted(kinds.items()))}); "
              f"{len(states)} tasks answered ({len(completed)} completed), {len(load.streams)} streams, "
              f"{cancels['asked']} cancels, {len(load.errors)} retryable errors answered; nothing lost")
    finally:
        stop(proc)
        stop(agent)


def test_a_webhook_receiver_down_for_a_while_gets_everything_in_order_and_the_rest_goes_to_the_dlq(aws_host, proxy):
    receiver = WebhookReceiver(down=True)
    # Four attempts (backoff 2 s base, full jitter: the third comes 3 to 6 s after the first): a 2 s
    # outage is ridden out, a permanent one is not.
    base, proc = aws_host("--agent", "echo", "--push-max-attempts", "4")
    try:
        tasks = []
        for i in range(6):
            answer = rpc(base, "SendMessage", message(f"hello {i}", receiver.url))
            tasks.append(answer["result"]["task"]["id"])
        time.sleep(2)
        refused_while_down = receiver.refused
        receiver.down = False
        last_seq = aws_host.aws.last_seq(tasks)
        delivered = {}
        for _ in range(300):  # bounded: 30 s
            delivered = {}
            for headers, body in list(receiver.received):
                task_id = (body.get("statusUpdate") or body.get("artifactUpdate") or {}).get("taskId")
                delivered.setdefault(task_id, []).append(int(headers["a2a-event-id"]))
            if all(set(delivered.get(t, [])) >= set(range(1, last_seq[t] + 1)) for t in tasks):
                break
            time.sleep(0.1)
        for task_id in tasks:
            seqs = delivered.get(task_id, [])
            assert seqs == sorted(seqs), f"{task_id}: out of order {seqs}"
            assert set(seqs) == set(range(1, last_seq[task_id] + 1)), f"{task_id}: {seqs}"
        assert refused_while_down >= len(tasks), "the receiver was never tried while down"

        # A receiver that never comes back: the deliveries exhaust their attempts and wait in the DLQ.
        dead = WebhookReceiver(down=True)
        answer = rpc(base, "SendMessage", message("nobody listens", dead.url))
        events = aws_host.aws.last_seq([answer["result"]["task"]["id"]])[answer["result"]["task"]["id"]]
        in_dlq = 0
        for _ in range(600):  # bounded: 60 s (4 attempts: 0 s, 1-2 s, 3-6 s, 7-14 s, then the redrive)
            in_dlq = aws_host.aws.visible("push-dlq")
            if in_dlq >= 1:
                break
            time.sleep(0.1)
        assert in_dlq >= 1, f"nothing reached the push DLQ ({dead.refused} refusals)"
        assert dead.refused >= 4, dead.refused
        print(f"\nfaults: webhook down 2 s: {refused_while_down} refusals, then {sum(len(v) for v in delivered.values())} "
              f"deliveries of {len(tasks)} tasks in order; a dead receiver: {dead.refused} attempts, "
              f"{in_dlq} of its {events} notifications in the DLQ (the metric of PushDeadLetterAlarm moved)")
    finally:
        stop(proc)


def test_poison_input_ends_in_the_dlq_or_failed_and_other_tasks_go_on(aws_host, proxy, tmp_path):
    base, proc = aws_host("--agent", "echo")
    try:
        aws = aws_host.aws
        work = aws.queue_url("work")
        aws.sqs.send_message(QueueUrl=work, MessageBody="{not a job", MessageGroupId="poison",
                             MessageDeduplicationId=str(uuid.uuid4()))
        # Other tasks are served meanwhile.
        for i in range(5):
            answer = rpc(base, "SendMessage", message(f"still here {i}"))
            assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
        # The unreadable job comes back after each visibility timeout until maxReceiveCount (5),
        # then SQS moves it to the dead-letter queue.
        in_dlq = 0
        for _ in range(400):  # bounded: 40 s (5 receives, 3 s apart)
            in_dlq = aws.visible("work-dlq")
            if in_dlq:
                break
            time.sleep(0.1)
        assert in_dlq == 1, "the unreadable job did not reach the work DLQ"
        got = aws.sqs.receive_message(QueueUrl=aws.queue_url("work-dlq"), MaxNumberOfMessages=1)
        assert got["Messages"][0]["Body"] == "{not a job"
    finally:
        stop(proc)

    # An agent that crashes on one message every time: that task fails with a reason; the rest go on.
    runs_log = tmp_path / "runs.jsonl"
    agent_url, agent = start_agent(runs_log)
    base, proc = aws_host("--agent-url", agent_url)
    try:
        bad = rpc(base, "SendMessage", message("poison"))["result"]["task"]  # agent.py answers it 500
        good = rpc(base, "SendMessage", message(TEXT))["result"]["task"]
        assert good["status"]["state"] == "TASK_STATE_COMPLETED", good
        for _ in range(300):  # bounded: 30 s
            bad = rpc(base, "GetTask", {"id": bad["id"]})["result"]
            if bad["status"]["state"] in FINAL:
                break
            time.sleep(0.1)
        assert bad["status"]["state"] == "TASK_STATE_FAILED", bad["status"]
        reason = bad["status"]["message"]["parts"][0]["text"]
        assert reason, bad["status"]
        print(f"\nfaults: an unreadable job in the work DLQ after 5 receives; an agent crashing on one "
              f"message: that task FAILED ({reason[:80]!r}), the others completed")
    finally:
        stop(proc)
        stop(agent)
