#!/usr/bin/env bash
# A throwaway MIT Kerberos KDC on loopback for the Kerberos tests (Debian krb5-kdc; kadmin.local
# and kinit from krb5-admin-server and krb5-user). Everything lives in DIR: its own krb5.conf
# (KRB5_CONFIG), kdc.conf (KRB5_KDC_PROFILE), database, stash, keytabs and log; no system file is
# read or changed (/etc/krb5.conf is never used: KRB5_CONFIG points at DIR/krb5.conf).
#
#   scripts/kdc.sh install               apt-get install krb5-kdc krb5-admin-server krb5-user python3-gssapi (as root)
#   scripts/kdc.sh start DIR [PORT]      realm SQLCLIENT.TEST on 127.0.0.1:PORT (a free port when omitted), TCP
#                                        and UDP; principals alice (client keytab DIR/client.keytab) and
#                                        shortlived (tickets of at most 1 s); prints "kdc PORT DIR"
#   scripts/kdc.sh service DIR SPN       adds the service principal SPN (e.g. MSSQLSvc/localhost:1433) with a
#                                        random key to DIR/service.keytab (the acceptor's KRB5_KTNAME)
#   scripts/kdc.sh kinit DIR CCACHE [PRINCIPAL [LIFETIME]]
#                                        a ticket for PRINCIPAL (default alice) from DIR/client.keytab into CCACHE
#   scripts/kdc.sh stop DIR              stops the KDC started in DIR (by its pid file)
#
# The realm's krb5.conf asks for TCP only (udp_preference_limit = 1), no DNS, no reverse lookups,
# and a clock skew of 1 s (so a ticket that expired a second ago is refused at once).
set -euo pipefail

REALM=SQLCLIENT.TEST
MASTER_PASSWORD="throwaway-master-$$"

need() {
    for tool in krb5kdc kdb5_util kadmin.local kinit; do
        command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin"
        command -v "$tool" >/dev/null 2>&1 || { echo "kdc.sh: $tool is missing (scripts/kdc.sh install)" >&2; exit 3; }
    done
}

free_port() {
    python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

env_for() {
    export KRB5_CONFIG="$1/krb5.conf" KRB5_KDC_PROFILE="$1/kdc.conf"
}

cmd_install() {
    if dpkg -s krb5-kdc krb5-admin-server krb5-user python3-gssapi >/dev/null 2>&1; then return 0; fi
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    command -v apt-get >/dev/null 2>&1 || { echo "kdc.sh: no apt-get: install MIT Kerberos's KDC yourself" >&2; return 1; }
    # Another apt-get may hold the dpkg lock: wait and retry (a few times).
    for attempt in 1 2 3 4 5; do
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
        if $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq krb5-kdc krb5-admin-server krb5-user python3-gssapi >/dev/null; then
            return 0
        fi
        [ "$attempt" = 5 ] || sleep 10
    done
    return 1
}

cmd_start() {
    need
    local dir="$1" port="${2:-}"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    [ -n "$port" ] || port="$(free_port)"
    cat >"$dir/krb5.conf" <<EOF
[libdefaults]
    default_realm = $REALM
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    clockskew = 1
    ticket_lifetime = 1h
    default_ccache_name = FILE:$dir/default.ccache
[realms]
    $REALM = {
        kdc = 127.0.0.1:$port
        admin_server = 127.0.0.1:$port
    }
[domain_realm]
    localhost = $REALM
    .localhost = $REALM
[logging]
    kdc = FILE:$dir/kdc.log
    default = FILE:$dir/krb5.log
EOF
    cat >"$dir/kdc.conf" <<EOF
[kdcdefaults]
    kdc_listen = 127.0.0.1:$port
    kdc_tcp_listen = 127.0.0.1:$port
[realms]
    $REALM = {
        database_name = $dir/principal
        key_stash_file = $dir/stash
        acl_file = $dir/kadm5.acl
        max_life = 10h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }
[logging]
    kdc = FILE:$dir/kdc.log
EOF
    : >"$dir/kadm5.acl"
    env_for "$dir"
    if [ ! -f "$dir/principal" ]; then
        kdb5_util create -s -r "$REALM" -P "$MASTER_PASSWORD" >/dev/null 2>&1
        kadmin.local -q "addprinc -randkey alice@$REALM" >/dev/null 2>&1
        kadmin.local -q "addprinc -randkey -maxlife 1s shortlived@$REALM" >/dev/null 2>&1
        kadmin.local -q "ktadd -k $dir/client.keytab alice@$REALM shortlived@$REALM" >/dev/null 2>&1
    fi
    krb5kdc -r "$REALM" -P "$dir/kdc.pid"
    # Wait (at most 5 s) for the TCP port.
    for _ in $(seq 50); do
        if python3 -c "import socket,sys; s=socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; then
            echo "kdc $port $dir"
            return 0
        fi
        sleep 0.1
    done
    echo "kdc.sh: the KDC did not start (see $dir/kdc.log)" >&2
    return 1
}

cmd_service() {
    need
    local dir="$1" spn="$2"
    env_for "$dir"
    kadmin.local -q "addprinc -randkey $spn@$REALM" >/dev/null 2>&1
    kadmin.local -q "ktadd -k $dir/service.keytab $spn@$REALM" >/dev/null 2>&1
    echo "service $spn@$REALM $dir/service.keytab"
}

cmd_kinit() {
    need
    local dir="$1" ccache="$2" principal="${3:-alice}" lifetime="${4:-}"
    env_for "$dir"
    local args=(-k -t "$dir/client.keytab" -c "$ccache")
    [ -z "$lifetime" ] || args+=(-l "$lifetime")
    kinit "${args[@]}" "$principal@$REALM"
}

cmd_stop() {
    local dir="$1"
    if [ -f "$dir/kdc.pid" ]; then
        local pid
        pid="$(cat "$dir/kdc.pid")"
        kill "$pid" 2>/dev/null || true
        # A KDC started from a thread with SIGTERM blocked (a test runner's) inherits the mask: KILL it.
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$dir/kdc.pid"
    fi
}

case "${1:-}" in
    install) cmd_install ;;
    start) [ $# -ge 2 ] || { echo "usage: $0 start DIR [PORT]" >&2; exit 2; }; cmd_start "$2" "${3:-}" ;;
    service) [ $# -ge 3 ] || { echo "usage: $0 service DIR SPN" >&2; exit 2; }; cmd_service "$2" "$3" ;;
    kinit) [ $# -ge 3 ] || { echo "usage: $0 kinit DIR CCACHE [PRINCIPAL [LIFETIME]]" >&2; exit 2; }; cmd_kinit "$2" "$3" "${4:-}" "${5:-}" ;;
    stop) [ $# -ge 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; cmd_stop "$2" ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
