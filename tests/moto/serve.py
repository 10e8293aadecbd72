"""moto_server with one change: DynamoDB requests are served one at a time.

moto checks a TransactWriteItems' conditions and then applies its writes without a lock, so two
concurrent transactions conditioned on the same version can both commit; DynamoDB itself makes
transactions serializable. Serializing moto's DynamoDB requests restores that guarantee for the
tests (50 concurrent writers must lose nothing). Other services, SQS long polls included, stay
concurrent.

Usage: python serve.py HOST PORT
"""

import sys
import threading

from moto.moto_server.threaded_moto_server import MotoRequestHandler
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


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, SerializeDynamoDB(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
