#!/usr/bin/env python3
"""The server side of the TLS provider contract (Tests/SQLClientTests/TLSContract) for platforms
whose test target links no OpenSSL (macOS, where the client under test is Network.framework):
Python's ssl module over memory BIOs, driven line by line on stdin/stdout.

    tls-contract-server.py --cert PEM --key PEM [--tls13] [--alpn]

Requests, one a line: `hs HEX` (client handshake bytes), `enc HEX`, `dec HEX`, `info`.
Answers, one a line: `ok HEX [1|0]` (bytes to send; for hs, whether the handshake is complete),
`ok VERSION ALPN SNI` for info ("-" for none), or `err REASON`.
"""
import argparse
import ssl
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--tls13", action="store_true")
    parser.add_argument("--alpn", action="store_true")
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.maximum_version = ssl.TLSVersion.TLSv1_3 if args.tls13 else ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.cert, args.key)
    if args.alpn:
        context.set_alpn_protocols(["tds/8.0"])
    requested = {"name": None}

    def remember(_sslobject, name, _context):
        requested["name"] = name

    context.sni_callback = remember
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_side=True)
    done = False

    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        op, data = parts[0], bytes.fromhex(parts[1]) if len(parts) > 1 else b""
        try:
            if op == "hs":
                incoming.write(data)
                if not done:
                    try:
                        tls.do_handshake()
                        done = True
                    except ssl.SSLWantReadError:
                        pass
                answer = "ok %s %d" % (outgoing.read().hex() or "-", 1 if done else 0)
            elif op == "enc":
                tls.write(data)
                answer = "ok %s" % (outgoing.read().hex() or "-")
            elif op == "dec":
                incoming.write(data)
                plain = b""
                while True:
                    try:
                        chunk = tls.read(16384)
                    except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                        break
                    if not chunk:
                        break
                    plain += chunk
                answer = "ok %s" % (plain.hex() or "-")
            elif op == "info":
                answer = "ok %s %s %s" % (tls.version() if done else "-", tls.selected_alpn_protocol() or "-",
                                          requested["name"] or "-")
            else:
                answer = "err unknown request %s" % op
        except (ssl.SSLError, ValueError) as error:
            answer = "err %s" % str(error).replace("\n", " ")
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
