#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into OUT/<harness>/ at run time.

Real bytes come from ../shared/captures (read here, never copied into the repository) and from
the project's own Fixtures/ (oracle sessions, Fixtures/bad). Each harness's input starts with
its selector bytes (see the harness sources); the seeds set them to common values.
Usage: seeds.py ROOT CAPTURES OUT
"""
import os, re, sys, struct, hashlib

root, captures, out = sys.argv[1], sys.argv[2], sys.argv[3]
harnesses = ["PacketFraming", "Prelogin", "Login7", "ClientRequests", "TokenStream",
             "TokenStreamInResult", "TypeInfoValues", "Capture", "ConnectionString", "SSRP", "Client", "JsonVector"]
for h in harnesses:
    os.makedirs(os.path.join(out, h), exist_ok=True)

def put(h, data):
    data = bytes(data)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(out, h, name), "wb") as f:
        f.write(data)

def hex_bytes(path):
    data = bytearray()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            for tok in line.split():
                if re.fullmatch(r"[0-9a-fA-F]{2}", tok):
                    data.append(int(tok, 16))
    return bytes(data)

def packets(data):
    """Splits whole TDS packets; None when the bytes are not packets."""
    out, i = [], 0
    while i + 8 <= len(data):
        length = data[i + 2] << 8 | data[i + 3]
        if length < 8 or i + length > len(data) or data[i] not in (1, 2, 3, 4, 6, 7, 8, 14, 16, 17, 18):
            return None
        out.append((data[i], data[i + 8:i + length]))
        i += length
    return out if out and i == len(data) else None

V74 = 4   # fuzzVersions index of TDS 7.4 (see FuzzSupport.swift)
hex_files, pcaps = [], []
if os.path.isdir(captures):
    for dirpath, _, files in os.walk(captures):
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            if f.endswith(".hex"):
                hex_files.append(p)
            elif f.endswith(".pcap") or f.endswith(".pcapng"):
                pcaps.append(p)

for p in hex_files:
    data = hex_bytes(p)
    put("PacketFraming", b"\x01\x07" + data)
    with open(p, "rb") as f:
        put("Capture", f.read()[:4096])
    pk = packets(data)
    if pk:
        bodies = {}
        for t, payload in pk:
            bodies.setdefault(t, bytearray()).extend(payload)
        for t, body in bodies.items():
            body = bytes(body)
            if t == 0x12:
                put("Prelogin", bytes([V74]) + body)
            elif t == 0x10:
                put("Login7", bytes([V74]) + body)
            elif t in (0x01, 0x03, 0x0E, 0x08):
                sel = {0x01: 0, 0x03: 1, 0x0E: 2, 0x08: 3}[t]
                put("ClientRequests", bytes([V74, sel]) + body)
            elif t == 0x04:
                put("TokenStream", bytes([V74, 63]) + body)
                put("TokenStreamInResult", bytes([len(pk) % 50, 63]) + body)
    elif "server-tokens" in p or "result" in p or "response" in p.lower():
        put("TokenStream", bytes([V74, 63]) + data)
        put("TokenStreamInResult", bytes([0, 63]) + data)

for p in pcaps:
    with open(p, "rb") as f:
        put("Capture", f.read())

# The project's own fixtures: oracle sessions (responses of every type), Fixtures/bad.
sessions = os.path.join(root, "Fixtures", "sessions")
for dirpath, _, files in os.walk(sessions):
    for f in sorted(files):
        if not f.endswith(".tdssession"):
            continue
        response, inside = bytearray(), False
        for line in open(os.path.join(dirpath, f), encoding="utf-8"):
            s = line.strip()
            if s.startswith(">>>"):
                if response:
                    put("TokenStream", bytes([V74, 63]) + response)
                    put("TokenStreamInResult", bytes([0, 63]) + response)
                response, inside = bytearray(), False
            elif s.startswith("<<<"):
                inside = True
            elif inside and s and not s.startswith("#"):
                for tok in s.split():
                    if re.fullmatch(r"[0-9a-fA-F]{2}", tok):
                        response.append(int(tok, 16))
        if response:
            put("TokenStream", bytes([V74, 63]) + response)
            put("TokenStreamInResult", bytes([0, 63]) + response)

bad = os.path.join(root, "Fixtures", "bad")
if os.path.isdir(bad):
    # Each file's bytes (hex text decoded), with the selector bytes its harness expects.
    prefixes = {"packets": ("PacketFraming", bytes([1, 7])), "prelogin": ("Prelogin", bytes([V74])),
                "login7": ("Login7", bytes([V74])), "tokens": ("TokenStream", bytes([V74, 63])),
                "value": ("TypeInfoValues", bytes([V74])), "capture": ("Capture", b"")}
    for f in sorted(os.listdir(bad)):
        p = os.path.join(bad, f)
        kind = f.split(".")[0]
        if not os.path.isfile(p) or kind not in prefixes:
            continue
        data = hex_bytes(p) if f.endswith(".hex") else open(p, "rb").read()
        target, prefix = prefixes[kind]
        put(target, prefix + data)
        if kind == "tokens":
            put("TokenStreamInResult", bytes([0, 63]) + data)

# TYPE_INFO seeds: each type byte with plausible lengths, then a few value bytes.
for t in [0x1F, 0x30, 0x32, 0x34, 0x38, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x7A, 0x7F]:
    put("TypeInfoValues", bytes([V74, t]) + b"\x01\x02\x03\x04\x05\x06\x07\x08")
for t, ln in [(0x24, 16), (0x26, 4), (0x26, 8), (0x68, 1), (0x6D, 8), (0x6E, 8), (0x6F, 8), (0x6F, 4)]:
    put("TypeInfoValues", bytes([V74, t, ln, ln]) + bytes(range(1, ln + 1)))
put("TypeInfoValues", bytes([V74, 0x6A, 17, 38, 10, 17, 1]) + bytes(16))
put("TypeInfoValues", bytes([V74, 0x6C, 5, 9, 2, 5, 0, 0x39, 0x30, 0, 0]))
put("TypeInfoValues", bytes([V74, 0x28, 3, 0x5A, 0x95, 0x0A]))
put("TypeInfoValues", bytes([V74, 0x29, 7, 5, 1, 2, 3, 4, 5]))
put("TypeInfoValues", bytes([V74, 0x2A, 7, 8, 1, 2, 3, 4, 5, 0x5A, 0x95, 0x0A]))
put("TypeInfoValues", bytes([V74, 0x2B, 7, 10, 1, 2, 3, 4, 5, 0x5A, 0x95, 0x0A, 0x3C, 0]))
coll = b"\x09\x04\xD0\x00\x34"
put("TypeInfoValues", bytes([V74, 0xE7, 0x64, 0]) + coll + b"\x04\x00h\x00i\x00")
put("TypeInfoValues", bytes([V74, 0xA7, 0x64, 0]) + coll + b"\x02\x00hi")
put("TypeInfoValues", bytes([V74, 0xE7, 0xFF, 0xFF]) + coll + b"h\x00i\x00")
put("TypeInfoValues", bytes([V74, 0xA5, 0x64, 0x00, 0x02, 0x00, 0xAB, 0xCD]))
put("TypeInfoValues", bytes([V74, 0xAD, 0x04, 0x00, 0x04, 0x00, 1, 2, 3, 4]))
put("TypeInfoValues", bytes([V74, 0xEF, 0x08, 0x00]) + coll + b"\x08\x00a\x00b\x00c\x00d\x00")
put("TypeInfoValues", bytes([V74, 0x23, 0xFF, 0xFF, 0xFF, 0x7F]) + coll + b"\x10" + bytes(16) + bytes(8) + b"\x02\x00\x00\x00hi")
put("TypeInfoValues", bytes([V74, 0x62, 0x50, 0x1F, 0, 0, 6, 0, 0, 0, 0x38, 0, 1, 0, 0, 0]))
put("TypeInfoValues", bytes([V74, 0xF1, 0]) + b"<\x00a\x00/\x00>\x00")
put("TypeInfoValues", bytes([V74, 0x27, 0x10]) + coll + b"\x02hi")

# COLMETADATA with a CEK table and CryptoMetaData (Always Encrypted, [MS-TDS] 2.2.7.4): byte 0's
# 0x80 bit turns column encryption on in the TokenStream harness. A valid table (two entries, one
# with two values) and encrypted columns with a ROW of varbinary ciphertexts; then hostile ones:
# an Ordinal past the table, a custom algorithm name, 65,535 entries that stop early, values
# declaring long keys that are not there.
def bvarchar(t):
    return bytes([len(t)]) + t.encode("utf-16-le")

def usvarchar(t):
    return struct.pack("<H", len(t)) + t.encode("utf-16-le")

def cek_entry(i, values):
    out = struct.pack("<IIIQ", 7, i, 1, 0x0102030405060708) + bytes([len(values)])
    for key, store, path in values:
        out += struct.pack("<H", len(key)) + key + bvarchar(store) + usvarchar(path) + bvarchar("RSA_OAEP")
    return out

def crypto(ordinal, base, algo=2, name=None, kind=1, norm=1):
    out = struct.pack("<HI", ordinal, 0) + base + bytes([algo])
    if algo == 0:
        out += bvarchar(name or "")
    return out + bytes([kind, norm])

INT4 = bytes([0x38])
NCHAR10 = bytes([0xEF, 20, 0]) + coll
VARBINARY = bytes([0xA5, 0x40, 0x1F])

def ae_colmetadata(entries, columns):
    out = b"\x81" + struct.pack("<H", len(columns)) + struct.pack("<H", len(entries)) + b"".join(entries)
    for name, flags, tinfo, meta in columns:
        out += struct.pack("<IH", 0, flags) + tinfo + (meta or b"") + bvarchar(name)
    return out

entries = [cek_entry(1, [(bytes(range(64)) * 4, "MSSQL_CERTIFICATE_STORE", "CurrentUser/My/0BE978BA81EED610015FD8B7CAEF55F1614CA3B6")]),
           cek_entry(2, [(b"\xA5" * 40, "CUSTOM", "vault/key1"), (b"\x01\x02\x03", "MSSQL_CERTIFICATE_STORE", "LocalMachine/My/AB12")])]
columns = [("id", 0x0001, INT4, None), ("name", 0x0801, VARBINARY, crypto(0, NCHAR10)),
           ("salary", 0x0800, VARBINARY, crypto(1, bytes([0x26, 4]), kind=2))]
cell = bytes([1]) + bytes(range(32)) + bytes(range(16)) + bytes(range(32))
row = b"\xD1" + struct.pack("<i", 5) + struct.pack("<H", len(cell)) + cell + struct.pack("<H", len(cell)) + cell
done = b"\xFD" + struct.pack("<HHQ", 0x10, 0xC1, 1)
ae_seeds = [ae_colmetadata(entries, columns) + row + done,
            ae_colmetadata(entries, columns[:1] + [("x", 0x0800, VARBINARY, crypto(2, INT4))]) + done,
            ae_colmetadata(entries, [("x", 0x0800, VARBINARY, crypto(0, INT4, algo=0, name="MY_ALGORITHM"))]) + done,
            ae_colmetadata([], [("x", 0x0800, VARBINARY, crypto(0, INT4))]) + done,
            b"\x81\x01\x00\xFF\xFF" + cek_entry(0, []) * 50,
            b"\x81\x01\x00\x01\x00" + struct.pack("<IIIQ", 7, 1, 1, 0) + b"\xFF" + b"\xFF\xFF" + b"\x00" * 16]
for seed in ae_seeds:
    put("TokenStream", bytes([V74 | 0x80, 63]) + seed)
    put("TokenStream", bytes([V74 | 0x80, 0]) + seed)
put("ConnectionString", b"Server=127.0.0.1;Column Encryption Setting=Enabled;Encrypt=false")

# Connection strings and SSRP replies of our own.
for s in ["Server=tcp:db.example.com,1433;Database=shop;User ID=app;Password=x;Encrypt=true;TrustServerCertificate=yes",
          "Data Source=host\\INST;Initial Catalog=\"a;b\";UID={u}}x};PWD='p''q';Connect Timeout=5;Packet Size=8000",
          "server=[::1]:1433;TDS Version=7.3;App=x;WSID=w;Language=us_english;Text Size=-1",
          "Addr=.\\SQLEXPRESS:1500;Integrated Security=false;Pooling=false;MultipleActiveResultSets=no",
          "Server=(local);Encrypt=Strict", "Server==x;;;", "Network Address=::1,1433;Encrypt=optional"]:
    put("ConnectionString", s.encode())

def ssrp(text):
    body = text.encode()
    return b"\x05" + struct.pack("<H", len(body)) + body

put("SSRP", ssrp("ServerName;HOST;InstanceName;SQLEXPRESS;IsClustered;No;Version;16.0.1000.6;tcp;1433;;"))
put("SSRP", ssrp("ServerName;A;InstanceName;ONE;IsClustered;No;Version;15.0;tcp;50001;np;\\\\A\\pipe\\sql;;"
                 "ServerName;A;InstanceName;TWO;IsClustered;No;Version;16.0;tcp;50002;;"))
put("SSRP", b"\x05\xff\xff" + b"ServerName;x")

# Client: a whole server side (PRELOGIN response with ENCRYPT_NOT_SUP, a login response, the
# response to one SQL batch), as packets. Login and batch responses come from the captures.
def packet(t, body, pid=1):
    return bytes([t, 1]) + struct.pack(">H", len(body) + 8) + bytes([0, 0, pid, 0]) + body

def body_of(path):
    data = hex_bytes(path)
    pk = packets(data)
    return b"".join(p for _, p in pk) if pk else data

prelogin = bytes([0, 0, 11, 0, 6, 1, 0, 17, 0, 1, 0xFF, 16, 0, 0x10, 0, 0, 0, 2])
logins = [os.path.join(captures, "ms-tds-spec", "04-login-response.hex"),
          os.path.join(captures, "pysqlbridge", "login_response.hex")]
results = [os.path.join(captures, "pysqlbridge", "result.hex"),
           os.path.join(captures, "ms-tds-spec", "07-sql-batch-server-response.hex"),
           os.path.join(captures, "packetbeat", "packetbeat_test_16x_typesResponse_1.hex")]
for login in logins:
    for result in results:
        if os.path.isfile(login) and os.path.isfile(result):
            stream = packet(0x04, prelogin) + packet(0x04, body_of(login)) + packet(0x04, body_of(result))
            for chunk_selector in (0, 2):
                put("Client", bytes([chunk_selector]) + stream)

# JsonVector (SQL Server 2025 json and vector): selector 0 vector TYPE_INFO + values, 1 json PLP
# bytes, 2 JSON array text, 3 float16 bits.
put("JsonVector", bytes([0, 0x14, 0, 0, 0x14, 0, 0xA9, 1, 3, 0, 0, 0, 0, 0]) + bytes([0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0, 0, 0, 0, 0x3F]) + b"\xff\xff")
put("JsonVector", bytes([0, 0x0C, 0, 1, 0x0C, 0, 0xA9, 1, 2, 0, 1, 0, 0, 0, 0x00, 0x3C, 0xFF, 0x7B]))
put("JsonVector", bytes([1]) + '{"a":[1,2],"b":"\u00fc"}'.encode("utf-8"))
put("JsonVector", bytes([2]) + b"[1.0000000e+000,-2.5000000e+000, 3]")
put("JsonVector", bytes([3, 0x00, 0x3C, 0x01, 0x00, 0xFF, 0x7B, 0x00, 0x7C, 0x00, 0x80]))
