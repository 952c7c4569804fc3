"""A Kerberos (SPNEGO) test server: pysqlbridge behind MIT Kerberos's GSSAPI acceptor through
python-gssapi (for the Kerberos tests). MIT's acceptor takes SPNEGO (Negotiate) and bare Kerberos
tokens itself. (pyspnego's Negotiate server cannot serve here: its Kerberos half needs pykrb5, which
has no Debian package and no Linux wheel.)

    .venv/bin/python scripts/pysqlbridge_kerberos.py serve CONFIG
        pysqlbridge's login state machine (tds.connection.Connection) on its own loopback socket (an
        ephemeral port, printed on stdout as "listening PORT"), with an acceptor_factory that runs a
        GSSAPI acceptor context (default credentials: the keytab KRB5_KTNAME); one thread per connection. CONFIG is a pysqlbridge config (its
        tables answer queries; SUSER_SNAME() answers the Kerberos principal). A refused token closes
        the connection without an ERROR token, as pysqlbridge does.

Environment: KRB5_CONFIG (the test realm's krb5.conf, from scripts/kdc.sh) and KRB5_KTNAME (the
service keytab holding MSSQLSvc/host:port). python-gssapi comes from the venv when installed there,
else from Debian's python3-gssapi (same Python minor version: its directory is appended to sys.path).

SQL Server sends the acceptor's last SPNEGO token (the Kerberos AP-REP that proves the server to the
client: mutual authentication) in an SSPI token before LOGINACK; pysqlbridge drops the token of the
completing step, so this server's Connection sends it: in the login response's message, before
LOGINACK (default), or with KERBEROS_FINAL_TOKEN=separate in a message of its own first.
"""
import os
import logging
import signal
import socket
import sys
import threading

try:
    import gssapi  # noqa: F401
except ImportError:
    debian = "/usr/lib/python3/dist-packages"
    sys.path.append(debian)
    try:
        import gssapi  # noqa: F401
    except ImportError:
        sys.exit("python-gssapi is not installed (Debian python3-gssapi, or pip install gssapi into .venv)")

from pysqlbridge.auth import AuthenticationError, AuthResult
from pysqlbridge.catalog import load as load_catalog
from pysqlbridge.certificate import self_signed
from pysqlbridge.tds.connection import Connection
from pysqlbridge.tds.token import sspi_token


class KerberosAcceptor:
    """The interface pysqlbridge's Connection expects of an acceptor (see pysqlbridge.auth.SspiAcceptor)."""

    def __init__(self) -> None:
        self._context = gssapi.SecurityContext(usage="accept")
        self.final_token = b""

    @property
    def complete(self) -> bool:
        return self._context.complete

    def step(self, token: bytes) -> AuthResult:
        try:
            answer = self._context.step(token)
        except Exception as exc:  # gssapi.exceptions.GSSError for a refused or malformed token
            logging.warning("refused a Windows authentication token: %s", exc)
            raise AuthenticationError(f"GSSAPI rejected the token: {exc}") from exc
        if self._context.complete:
            self.final_token = answer or b""
            logging.info("authenticated %s (mechanism %s)", self._context.initiator_name, self._context.mech)
        return AuthResult(token=answer or b"", complete=self._context.complete)

    @property
    def username(self):
        return str(self._context.initiator_name) if self._context.complete else None


class KerberosConnection(Connection):
    """pysqlbridge's Connection, sending the acceptor's completing token before LOGINACK (as SQL Server does)."""

    _prefix = b""

    def _finish_login(self, responses):
        acceptor = self._acceptor
        final = getattr(acceptor, "final_token", b"") if acceptor is not None else b""
        if final and os.environ.get("KERBEROS_FINAL_TOKEN") == "separate":
            self._send(responses, sspi_token(final), packet_id=0)
        elif final:
            self._prefix = sspi_token(final)
        super()._finish_login(responses)

    def _send(self, responses, payload, packet_id=1):
        # The login response's tokens follow the SSPI token in one message (as SQL Server sends them).
        prefix, self._prefix = self._prefix, b""
        super()._send(responses, prefix + payload, packet_id)


def serve(config: str) -> None:
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
        connection = KerberosConnection(certificate, query_handler=catalog.answer, acceptor_factory=KerberosAcceptor)
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


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
