"""Runs pysqlbridge with a certificate and key from PEM files (for TLS verification tests).

    .venv/bin/python scripts/pysqlbridge_with_certificate.py CONFIG PORT CERT.pem KEY.pem

The command-line server always makes a self-signed certificate; this starts the same server
through pysqlbridge.server.serve(certificate=...), which the package offers for exactly this.
"""
import logging
import signal
import sys

from pysqlbridge.catalog import load as load_catalog
from pysqlbridge.certificate import Certificate
from pysqlbridge.logins import load as load_logins
from pysqlbridge.server import serve


def main() -> None:
    config, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    # A parent that spawned us from a thread with signals blocked must still be able to stop us.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(message)s")
    with open(cert, "rb") as c, open(key, "rb") as k:
        certificate = Certificate(cert_pem=c.read(), key_pem=k.read())
    catalog = load_catalog(config)
    serve("127.0.0.1", port, certificate=certificate, query_handler=catalog.answer,
          logins=load_logins(config))


if __name__ == "__main__":
    main()
