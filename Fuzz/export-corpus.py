#!/usr/bin/env python3
"""Minimises a volume run's corpora into Fixtures/fuzz-corpus/<harness>/ (the seeds Fuzz/run.sh
passes to every later run, smoke runs included).

Usage: Fuzz/export-corpus.py TREE [harness ...]
  TREE is a volume tree ($FUZZ_BUILD/volume) holding bin/<harness> and corpus/<harness>/.

For each harness the inputs are TREE/corpus/<harness>/ and the folder's current files. An input
is left out when it is longer than MAX_LEN bytes (the smoke run must load the folder in a second
or two) or when it holds bytes of ../shared/captures: any run of WINDOW bytes found in a capture
(a .pcap file's bytes, a .hex file's decoded bytes) and in none of the project's own seeds
(Fixtures/, Fuzz/seeds.py's own inputs), since captures are never copied into the repository,
not even cut or mutated. What is left goes through libFuzzer's `-merge=1` (the smallest set of
inputs keeping the coverage of all) and replaces the folder; files are named by their SHA-1.
Environment: CAPTURES (default ROOT/../shared/captures), FUZZ_NICE (default 19).
"""
import hashlib, os, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURES = os.environ.get("CAPTURES", os.path.join(ROOT, "..", "shared", "captures"))
NICE = os.environ.get("FUZZ_NICE", "19")
WINDOW = 16
MAX_LEN = 2048
HARNESSES = ["PacketFraming", "Prelogin", "Login7", "ClientRequests", "TokenStream",
             "TokenStreamInResult", "TypeInfoValues", "Capture", "ConnectionString", "SSRP", "Client"]

sys.path.insert(0, os.path.join(ROOT, "Fuzz"))


def windows(data):
    return {data[i:i + WINDOW] for i in range(len(data) - WINDOW + 1)}


def hex_bytes(path):
    out = bytearray()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                for tok in line.split():
                    if len(tok) == 2:
                        try:
                            out.append(int(tok, 16))
                        except ValueError:
                            pass
    return bytes(out)


def capture_windows():
    found = set()
    if not os.path.isdir(CAPTURES):
        return found
    for dirpath, _, files in os.walk(CAPTURES):
        for f in files:
            p = os.path.join(dirpath, f)
            if f.endswith(".hex"):
                found |= windows(hex_bytes(p))
            elif f.endswith(".pcap") or f.endswith(".pcapng"):
                found |= windows(open(p, "rb").read())
    return found


def own_windows():
    """Windows of the project's own seeds: Fuzz/seeds.py run without the captures."""
    found = set()
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, os.path.join(ROOT, "Fuzz", "seeds.py"), ROOT,
                        os.path.join(d, "no-captures"), os.path.join(d, "seeds")], check=True)
        for dirpath, _, files in os.walk(os.path.join(d, "seeds")):
            for f in files:
                found |= windows(open(os.path.join(dirpath, f), "rb").read())
    for dirpath, _, files in os.walk(os.path.join(ROOT, "Fixtures")):
        if "fuzz-corpus" in dirpath:
            continue
        for f in files:
            p = os.path.join(dirpath, f)
            found |= windows(hex_bytes(p) if not f.endswith(".json") else b"")
    return found


def main():
    tree = sys.argv[1]
    selected = sys.argv[2:] or HARNESSES
    foreign = capture_windows() - own_windows()
    for h in selected:
        binary = os.path.join(tree, "bin", h)
        dest = os.path.join(ROOT, "Fixtures", "fuzz-corpus", h)
        sources = [os.path.join(tree, "corpus", h), dest]
        with tempfile.TemporaryDirectory() as work:
            clean, merged = os.path.join(work, "clean"), os.path.join(work, "merged")
            os.makedirs(clean); os.makedirs(merged)
            kept = dropped_size = dropped_capture = 0
            for src in sources:
                if not os.path.isdir(src):
                    continue
                for f in os.listdir(src):
                    data = open(os.path.join(src, f), "rb").read()
                    if not data or len(data) > MAX_LEN:
                        dropped_size += 1
                        continue
                    if foreign and any(data[i:i + WINDOW] in foreign for i in range(len(data) - WINDOW + 1)):
                        dropped_capture += 1
                        continue
                    with open(os.path.join(clean, hashlib.sha1(data).hexdigest()[:16]), "wb") as out:
                        out.write(data)
                    kept += 1
            env = dict(os.environ, SWIFT_BACKTRACE="enable=no")
            r = subprocess.run(["nice", "-n", NICE, binary, "-merge=1", f"-max_len={MAX_LEN}",
                                "-timeout=60", "-rss_limit_mb=2048", "-malloc_limit_mb=256", merged, clean],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            if r.returncode != 0:
                sys.stderr.write(r.stderr.decode(errors="replace")[-2000:])
                sys.exit(f"export-corpus: merge of {h} failed ({r.returncode})")
            shutil.rmtree(dest, ignore_errors=True)
            os.makedirs(dest)
            total = 0
            for f in os.listdir(merged):
                data = open(os.path.join(merged, f), "rb").read()
                with open(os.path.join(dest, hashlib.sha1(data).hexdigest()[:16]), "wb") as out:
                    out.write(data)
                total += len(data)
            print(f"export-corpus: {h}: {len(os.listdir(dest))} files, {total} bytes "
                  f"(from {kept} inputs; left out {dropped_size} over {MAX_LEN} bytes or empty, "
                  f"{dropped_capture} holding capture bytes)")


main()
