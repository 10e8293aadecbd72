"""moto_server with five changes that make it behave like AWS where the tests need it.

1. DynamoDB requests are served one at a time.

moto checks a TransactWriteItems' conditions and then applies its writes without a lock, so two
concurrent transactions conditioned on the same version can both commit; DynamoDB itself makes
transactions serializable. Serializing moto's DynamoDB requests restores that guarantee for the
tests (50 concurrent writers must lose nothing). Other services, SQS long polls included, stay
concurrent.

2. KMS Sign honours MessageType=DIGEST. moto ignores the parameter and hashes the digest again;
KMS signs the given SHA-256 digest as prehashed, which is how a2a-local signs a card whose signing
input is over KMS's 4096-byte RAW limit. (KMS also checks the digest's length: so does this.)

3. A receive from a FIFO queue never hands out a message whose group has one in flight.
moto checks the groups in flight as they stood when a ReceiveMessage began, without a lock, so two
concurrent receives can take two messages of one group (a webhook's second event delivered while
its first is still being retried). SQS keeps a group's messages in order for any number of
consumers. Each receive is made atomic here; its long poll waits outside the lock.

4. A transaction backs up the items it names, not its whole table.
moto deep-copies every table a TransactWriteItems names before applying it (to roll back on a
failed condition) and keeps those copies alive: each transaction costs time and memory in
proportion to the table, so a long run slows down and grows (the soak run: 1 GB a minute, then
the kernel's OOM killer after 20 minutes). Here the table's copy is the table itself, and the
items the transaction names are copied instead and put back when it fails, which is the same
rollback for DynamoDB requests served one at a time (change 1).

5. A FIFO queue's deduplication ids outlive their messages.
moto drops a message as a duplicate only while a message with its id is still in the queue; SQS
drops any message whose id was sent in the last 5 minutes, deleted or not ("accepted successfully
but not delivered during the 5-minute deduplication interval"). A runner delivered again re-queues
its turn's webhook deliveries, counting on that: the ids are remembered here for the same interval.

Usage: python serve.py HOST PORT
"""

import copy
import sys
import threading
import time
import types

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.kms import responses as kms_responses
from moto.kms import utils as kms_utils
from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.sqs import models as sqs_models
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

DYNAMODB_LOCK = threading.Lock()


class SerializeDynamoDB:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB_"):
            return self.app(environ, start_response)
        with DYNAMODB_LOCK:
            # Materialize the body inside the lock: moto does its work while producing it.
            return list(self.app(environ, start_response))


SIGNING_DIGEST = threading.local()


def sign_response(original):
    def sign(self):
        SIGNING_DIGEST.on = self._get_param("MessageType") == "DIGEST"
        try:
            return original(self)
        finally:
            SIGNING_DIGEST.on = False

    return sign


def prehashed(message, algorithm):
    if len(message) != algorithm.digest_size:
        raise kms_utils.ValidationException(
            f"Digest is invalid length for algorithm {algorithm.name.upper()}: {len(message)} bytes"
        )
    return Prehashed(algorithm)


def ecdsa_sign(original):
    def sign(self, message, signing_algorithm):
        if not getattr(SIGNING_DIGEST, "on", False):
            return original(self, message, signing_algorithm)
        kms_utils.validate_signing_algorithm(signing_algorithm, self.valid_signing_algorithms)
        algorithm = self._ECDSAPrivateKey__hash_algorithm(signing_algorithm)
        return self.private_key.sign(message, ec.ECDSA(prehashed(message, algorithm)))

    return sign


def rsa_sign(original):
    def sign(self, message, signing_algorithm):
        if not getattr(SIGNING_DIGEST, "on", False):
            return original(self, message, signing_algorithm)
        kms_utils.validate_signing_algorithm(signing_algorithm, kms_utils.SigningAlgorithm.rsa_signing_algorithms())
        pad, algorithm = self._RSAPrivateKey__padding_and_hash_algorithm(signing_algorithm)
        return self.private_key.sign(message, pad, prehashed(message, algorithm))

    return sign


kms_responses.KmsResponse.sign = sign_response(kms_responses.KmsResponse.sign)
kms_utils.ECDSAPrivateKey.sign = ecdsa_sign(kms_utils.ECDSAPrivateKey.sign)
kms_utils.RSAPrivateKey.sign = rsa_sign(kms_utils.RSAPrivateKey.sign)


SQS_RECEIVE_LOCK = threading.Lock()


def atomic_receive(original):
    def receive(self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names=None):
        deadline = time.monotonic() + (wait_seconds_timeout or 0)
        while True:  # bounded: the long poll's wait (at most 20 s)
            with SQS_RECEIVE_LOCK:
                got = original(self, queue_name, count, 0, visibility_timeout, message_attribute_names)
            if got or time.monotonic() >= deadline:
                return got
            time.sleep(0.02)

    return receive


sqs_models.SQSBackend.receive_message = atomic_receive(sqs_models.SQSBackend.receive_message)


DEDUPLICATION_SECONDS = 300  # SQS's deduplication interval
SENT_IDS = {}  # (queue, deduplication id) -> monotonic time it was sent
SENT_IDS_LOCK = threading.Lock()


def remembered_ids(original):
    def add(self, message):
        if not (self.fifo_queue and message.deduplication_id):
            return original(self, message)
        now = time.monotonic()
        key = (self.name, message.deduplication_id)
        with SENT_IDS_LOCK:
            if len(SENT_IDS) > 10_000:  # bounded: only ids of the last 5 minutes stay
                for k in [k for k, at in SENT_IDS.items() if now - at >= DEDUPLICATION_SECONDS]:
                    del SENT_IDS[k]
            at = SENT_IDS.get(key)
            if at is not None and now - at < DEDUPLICATION_SECONDS:
                return None
            SENT_IDS[key] = now
        return original(self, message)

    return add


sqs_models.Queue.add_message = remembered_ids(sqs_models.Queue.add_message)


def no_table_copies(x, memo=None):
    return x if isinstance(x, Table) else copy.deepcopy(x, memo)


def keyed_backup(original):
    def transact(self, transact_items):
        saved = []
        for entry in transact_items:
            _, op = next(iter(entry.items()))
            table = self.tables.get(op.get("TableName"))
            attrs = op.get("Item") or op.get("Key") or {}
            if table is None or table.hash_key_attr not in attrs:
                continue
            hash_key = DynamoType(attrs[table.hash_key_attr])
            range_key = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr in attrs else None
            if table.has_range_key and range_key is None:
                continue
            saved.append((table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key))))
        try:
            return original(self, transact_items)
        except Exception:
            for table, hash_key, range_key, item in reversed(saved):
                holder, key = (table.items[hash_key], range_key) if range_key is not None else (table.items, hash_key)
                if item is None:
                    holder.pop(key, None)
                else:
                    holder[key] = item
            raise

    return transact


dynamodb_models.copy = types.SimpleNamespace(deepcopy=no_table_copies)
dynamodb_models.DynamoDBBackend.transact_write_items = keyed_backup(dynamodb_models.DynamoDBBackend.transact_write_items)


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, SerializeDynamoDB(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
