"""NTLM (Windows authentication) test servers built on pyspnego's acceptor (for the NTLM tests).

    .venv/bin/python scripts/pysqlbridge_ntlm.py serve CONFIG [--spnego]
        pysqlbridge's login state machine (tds.connection.Connection) on its own loopback socket
        (an ephemeral port, printed on stdout as "listening PORT"), with an acceptor_factory that
        runs pyspnego's NTLM server; one thread per connection. CONFIG is a pysqlbridge config
        (its tables answer queries). A failed NTLM check closes the connection without an ERROR
        token, as pysqlbridge does.
    .venv/bin/python scripts/pysqlbridge_ntlm.py step [--spnego]
        the bare acceptor: reads one hex token per line on stdin and answers one line per token:
        "token HEX" (send it back to the client), "complete DOMAIN\\user", or "error MESSAGE".

Both need NTLM_USER_FILE (DOMAIN:USER:PASSWORD lines) in the environment. With --spnego the
acceptor is pyspnego's Negotiate (SPNEGO) server, which also takes bare NTLM; without it, NTLM only.
"""
import logging
import signal
import socket
import sys
import threading

import spnego

from pysqlbridge.auth import AuthenticationError, AuthResult
from pysqlbridge.catalog import load as load_catalog
from pysqlbridge.certificate import self_signed
from pysqlbridge.tds.connection import Connection


class PyspnegoAcceptor:
    """The interface pysqlbridge's Connection expects of an acceptor (see pysqlbridge.auth.SspiAcceptor)."""

    def __init__(self, protocol: str) -> None:
        self._context = spnego.server(protocol=protocol)

    @property
    def complete(self) -> bool:
        return self._context.complete

    def step(self, token: bytes) -> AuthResult:
        try:
            answer = self._context.step(token)
        except Exception as exc:  # pyspnego raises its own error types for a bad response
            raise AuthenticationError(f"NTLM rejected the token: {exc}") from exc
        return AuthResult(token=answer or b"", complete=self._context.complete)

    @property
    def username(self):
        return self._context.client_principal if self._context.complete else None


def serve(config: str, protocol: str) -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(message)s")
    catalog = load_catalog(config)
    certificate = self_signed()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print(f"listening {listener.getsockname()[1]}", flush=True)

    def handle(client: socket.socket) -> None:
        connection = Connection(certificate, query_handler=catalog.answer,
                                acceptor_factory=lambda: PyspnegoAcceptor(protocol))
        try:
            client.settimeout(30)
            while True:
                data = client.recv(65536)
                if not data:
                    return
                for response in connection.receive(data):
                    client.sendall(response)
        except Exception as exc:
            logging.warning("connection failed in state %s: %s", connection.state.name, exc)
        finally:
            client.close()

    while True:
        client, _ = listener.accept()
        threading.Thread(target=handle, args=(client,), daemon=True).start()


def step(protocol: str) -> None:
    context = spnego.server(protocol=protocol)
    for line in sys.stdin:
        try:
            answer = context.step(bytes.fromhex(line.strip()))
        except Exception as exc:
            print(f"error {type(exc).__name__}: {exc}", flush=True)
            return
        if context.complete:
            print(f"complete {context.client_principal}", flush=True)
            return
        print(f"token {(answer or b'').hex()}", flush=True)


def main() -> None:
    protocol = "negotiate" if "--spnego" in sys.argv else "ntlm"
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2], protocol)
    elif len(sys.argv) >= 2 and sys.argv[1] == "step":
        step(protocol)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
